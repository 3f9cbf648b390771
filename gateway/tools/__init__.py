"""ADK-style tools: the function tool model and the context a tool runs with."""

from gateway.tools.actions import EventActions, ToolConfirmation
from gateway.tools.artifacts import ArtifactService, InMemoryArtifactService
from gateway.tools.auth_config import AuthConfig, AuthToolArguments
from gateway.tools.auth_credential import (
    AuthCredential,
    AuthCredentialTypes,
    HttpAuth,
    HttpCredentials,
    OAuth2Auth,
    ServiceAccount,
    ServiceAccountCredential,
)
from gateway.tools.auth_schemes import (
    APIKey,
    APIKeyIn,
    AuthScheme,
    AuthSchemeType,
    HTTPBase,
    HTTPBearer,
    OAuth2,
    OAuthFlowAuthorizationCode,
    OAuthFlowClientCredentials,
    OAuthFlowImplicit,
    OAuthFlowPassword,
    OAuthFlows,
    OAuthGrantType,
    OpenIdConnect,
    OpenIdConnectWithConfig,
)
from gateway.tools.authenticated_function_tool import AuthenticatedFunctionTool
from gateway.tools.base_tool import BaseTool
from gateway.tools.base_toolset import BaseToolset, ToolPredicate
from gateway.tools.context import ClientFeatures, ProgressLog, ProgressSink, ReadonlyContext, ToolContext
from gateway.tools.function_tool import FunctionTool
from gateway.tools.long_running_tool import LongRunningFunctionTool
from gateway.tools.memory_service import MemoryEntry, MemoryService, SearchMemoryResponse
from gateway.tools.state import State

__all__ = [
    "APIKey",
    "APIKeyIn",
    "ArtifactService",
    "AuthConfig",
    "AuthCredential",
    "AuthCredentialTypes",
    "AuthScheme",
    "AuthSchemeType",
    "AuthToolArguments",
    "AuthenticatedFunctionTool",
    "BaseTool",
    "BaseToolset",
    "ClientFeatures",
    "EventActions",
    "FunctionTool",
    "HTTPBase",
    "HTTPBearer",
    "HttpAuth",
    "HttpCredentials",
    "InMemoryArtifactService",
    "LongRunningFunctionTool",
    "MemoryEntry",
    "MemoryService",
    "OAuth2",
    "OAuth2Auth",
    "OAuthFlowAuthorizationCode",
    "OAuthFlowClientCredentials",
    "OAuthFlowImplicit",
    "OAuthFlowPassword",
    "OAuthFlows",
    "OAuthGrantType",
    "OpenIdConnect",
    "OpenIdConnectWithConfig",
    "ProgressLog",
    "ProgressSink",
    "ReadonlyContext",
    "SearchMemoryResponse",
    "ServiceAccount",
    "ServiceAccountCredential",
    "State",
    "ToolConfirmation",
    "ToolContext",
    "ToolPredicate",
]
