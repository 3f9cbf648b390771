"""The gateway's config file: its upstreams and tool sources, its access section and upstream credentials.

`file` reads and checks the JSON file (`load_config`); `access` holds its `auth`, `policies` and rate-limit
sections; `upstream_auth` an upstream's `auth` section; `references` turns the tool references of `tools` and
`serve --tools` (a file, a module, an agent) into tool sources.
"""

from gateway.config.file import MIN_RESULT_BYTES, GatewayConfig, ToolSearchConfig, UpstreamConfig, load_config

__all__ = ["MIN_RESULT_BYTES", "GatewayConfig", "ToolSearchConfig", "UpstreamConfig", "load_config"]
