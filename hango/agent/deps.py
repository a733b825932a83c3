"""What the runtime needs from outside: the database, the configuration, the providers, the store."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Engine

from hango.config import Config
from hango.providers import Provider, ProviderSettings, provider_for
from hango.store import TenantStore


@dataclass(frozen=True)
class Deps:
    engine: Engine
    config: Config

    @property
    def provider_settings(self) -> ProviderSettings:
        return ProviderSettings.from_config(self.config)

    def provider(self, model: str) -> tuple[Provider, str]:
        """The adapter for ``<provider>/<model>`` and the bare model name."""
        return provider_for(model, self.provider_settings)


@dataclass(frozen=True)
class RunContext:
    """What run hooks read through: the run's tenant store (on the run's connection) and its deps."""

    store: TenantStore
    deps: Deps
