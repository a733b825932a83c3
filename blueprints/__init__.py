"""Every blueprint of the app, registered from these two lists."""

from blueprints import (
    admin,
    agents,
    api_keys,
    audit,
    calls,
    chat,
    context,
    context_try,
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
    context_try.blp,
    calls.blp,
    overrides.blp,
    runs.blp,
    usage.blp,
    audit.blp,
]
PLAIN_BLUEPRINTS = [health.blp, admin.blp]
