"""Every blueprint of the app, registered from these two lists.

``context_try`` and ``suggestions`` add their routes to ``context.blp`` and ``compact`` to
``sessions.blp`` (one API area, one OpenAPI tag), so they are imported here for that and have
no blueprint of their own.
"""

from blueprints import (
    admin,
    agents,
    api_keys,
    audit,
    calls,
    chat,
    compact,  # noqa: F401 (adds its route to sessions.blp)
    context,
    context_try,  # noqa: F401 (adds its route to context.blp)
    health,
    mcp_servers,
    me,
    members,
    memory,
    messages,
    overrides,
    pending,  # noqa: F401 (adds its routes to context.blp)
    runs,
    sessions,
    skills,
    suggestions,  # noqa: F401 (adds its route to context.blp)
    tenant,
    usage,
)

API_BLUEPRINTS = [
    me.blp,
    tenant.blp,
    members.blp,
    api_keys.blp,
    agents.blp,
    mcp_servers.blp,
    memory.blp,
    skills.blp,
    sessions.blp,
    messages.blp,
    chat.blp,
    context.blp,
    calls.blp,
    overrides.blp,
    runs.blp,
    usage.blp,
    audit.blp,
]
PLAIN_BLUEPRINTS = [health.blp, admin.blp]
