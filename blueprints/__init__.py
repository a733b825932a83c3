"""Every blueprint of the app, registered from these two lists."""

from blueprints import (
    agents,
    api_keys,
    audit,
    chat,
    health,
    me,
    members,
    memory,
    messages,
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
    runs.blp,
    usage.blp,
    audit.blp,
]
PLAIN_BLUEPRINTS = [health.blp]
