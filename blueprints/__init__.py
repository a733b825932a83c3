"""Every blueprint of the app, registered from these two lists."""

from blueprints import agents, health, me

API_BLUEPRINTS = [me.blp, agents.blp]
PLAIN_BLUEPRINTS = [health.blp]
