"""Every blueprint of the app, registered from these two lists.

``context_try`` adds its route to ``context.blp`` (one API area, one OpenAPI tag), so it is
imported here for that and has no blueprint of its own.
"""

from blueprints import (
    admin,
    agents,
    api_keys,
    audit,
    calls,
    chat,
    context,
    context_try,  # noqa: F401 (adds its route to context.blp)
    health,
    me,
    members,
    memory,
    messages,
    overrides,
    runs,
    sessions,
    skills,
    tenant,
    usage,
)

API_BLUEPRINTS = [
    me.blp,
    tenant.blp,
    members.blp,
    api_keys.blp,
    agents.blp,
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
