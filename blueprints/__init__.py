"""Every blueprint of the app, registered from these lists: the one place that imports the blueprints.

An API area is one OpenAPI tag. The inspector's routes (``context_try``, ``pending``,
``suggestions``) nest in ``context`` and compact-now (``compact``) in ``sessions``: each
module has its own blueprint, and the area's URLs and tag are its parent's. No blueprint
imports another; what two of them share lives in ``common`` and the ``*_schemas`` modules.
"""

from blueprints import (
    admin,
    agents,
    api_keys,
    audit,
    calls,
    chat,
    compact,
    context,
    context_try,
    health,
    mcp_servers,
    me,
    members,
    memory,
    messages,
    overrides,
    pending,
    runs,
    sessions,
    skills,
    suggestions,
    tenant,
    usage,
)

NESTED = {sessions.blp: [compact.blp], context.blp: [context_try.blp, pending.blp, suggestions.blp]}
for area, parts in NESTED.items():
    for part in parts:
        area.register_blueprint(part)

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
