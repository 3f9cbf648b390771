"""A served agent's tool asking for the user's credential (google-adk's `adk_request_credential`), answered by the
server's sign-in.

ADK pauses the agent's run on an `adk_request_credential` call and waits for its client app to answer it. Served,
the MCP server is that app: the call's context either holds the principal's stored credential for the requested
`credential_key` (the agent is answered with it and resumes), or records the request, so that the server signs the
user in, exactly as for a served tool that asks, and runs the call again, which then finds the credential.
"""

from __future__ import annotations

from typing import Final

from google.adk.auth.auth_tool import AuthToolArguments
from google.genai import types as genai_types

from gateway.adk.auth import auth_config_from_adk, auth_credential_to_adk
from gateway.tools import ToolContext

__all__ = ["CREDENTIAL_CALL", "credential_answer"]

CREDENTIAL_CALL: Final = "adk_request_credential"


def credential_answer(
    context: ToolContext, call: genai_types.FunctionCall, answered_keys: set[str]
) -> genai_types.FunctionResponse | None:
    """The client app's answer to ADK's credential request `call`, from the credential `context` holds.

    Returns None when there is none yet, or when the agent asks again for one it was given in this call (in
    `answered_keys`, which this adds to): the request is then recorded on `context` (`request_credential`), and the
    server signs the user in (refreshing or signing in once more, never in a loop) and runs the call again.
    """
    requested = AuthToolArguments.model_validate(call.args or {}).auth_config
    config = auth_config_from_adk(requested)
    key = config.credential_key or ""
    found = None if key in answered_keys else context.get_auth_response(config)
    if found is None:
        context.request_credential(config)
        return None
    answered = requested.model_copy(deep=True)
    credential = auth_credential_to_adk(found)
    asked = requested.exchanged_auth_credential
    if credential.oauth2 is not None and asked is not None and asked.oauth2 is not None:
        # ADK accepts an OAuth2 answer only with the `state` of the sign-in it started.
        credential.oauth2.state = asked.oauth2.state
    answered.exchanged_auth_credential = credential
    answered_keys.add(key)
    return genai_types.FunctionResponse(
        id=call.id, name=CREDENTIAL_CALL, response=answered.model_dump(mode="json", by_alias=True, exclude_none=True)
    )
