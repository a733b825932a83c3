"""Honest layers: no module of hango/ or blueprints/ imports a higher layer, and hango/ has no circle.

The import graph is read with ``ast`` from the source (nothing is imported). Every
import counts, wherever it is written: at module level, inside a function (a lazy
import is still a dependency) and under ``if TYPE_CHECKING:`` (a circle of type
imports is still a circle a reader must untangle). ``from package import module``
is an edge to ``package.module`` only: importing a submodule runs its package's
``__init__`` first, but that is Python's mechanics, not a dependency of the importer.

The layer table is the one drawn in ``docs/system-architecture.md``: a module may
import its own layer and the layers below it, never one above. The web layer's own
rules close the module: no blueprint imports another, ``blueprints/`` reaches the
inspector only through its front door, and no view is longer than ten lines.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from hango.config import REPO_ROOT

# Lowest first. A module belongs to the layer of the longest prefix that names it.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "hango",
        "hango.errors",
        "hango.config",
        "hango.messages",
        "hango.telemetry",
        "hango.secret_box",
    ),
    ("hango.db",),
    ("hango.auth", "hango.audit", "hango.run_events", "hango.ratelimit"),
    ("hango.store",),
    ("hango.providers", "hango.mcp"),
    ("hango.agent", "hango.tool_search"),  # tool_search ranks tools with the agent tools' RE2 rule
    ("hango.inspector",),
    (
        "hango.api",
        "hango.contract",
        "hango.tenancy",
        "hango.authz",
        "hango.try_pool",
        "hango.admission",
        "hango.jobs",
        "hango.worker",
    ),
    ("blueprints",),
    ("hango.app",),
    ("hango.cli", "hango.__main__"),
)

Graph = dict[str, set[str]]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources_under(*folders: str) -> dict[str, str]:
    """Module name → source text of every ``.py`` file under ``folders`` (relative to the repo)."""
    return {
        module_name(path, REPO_ROOT): path.read_text(encoding="utf-8")
        for folder in folders
        for path in sorted((REPO_ROOT / folder).rglob("*.py"))
    }


def _base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute package a ``from ... import`` reads from."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    anchor = package[: len(package) - node.level + 1]
    return ".".join([*anchor, node.module] if node.module else anchor)


def _resolve(name: str, known: Mapping[str, str]) -> str | None:
    """The known module ``name`` lies in (its longest known prefix), or None for a third-party name."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def _targets(node: ast.AST, module: str, sources: Mapping[str, str]) -> list[str | None]:
    if isinstance(node, ast.Import):
        return [_resolve(alias.name, sources) for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    is_package = any(other.startswith(module + ".") for other in sources)
    base = _base(node, module, is_package)
    # ``from X import Y``: the submodule X.Y when there is one, else X itself.
    return [
        f"{base}.{alias.name}" if f"{base}.{alias.name}" in sources else _resolve(base, sources)
        for alias in node.names
    ]


def import_graph(sources: Mapping[str, str]) -> Graph:
    """Module → the known modules it imports (every import, at any depth of the source)."""
    graph: Graph = {name: set() for name in sources}
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            graph[module].update(t for t in _targets(node, module, sources) if t not in (None, module))
    return graph


def layer_of(module: str) -> int:
    best, layer = -1, None
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, layer = len(prefix), index
    assert layer is not None, f"{module} is in no layer of the table"
    return layer


def back_edges(graph: Graph) -> list[tuple[str, str]]:
    """Every import from a module to a module of a higher layer."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))


def cycles(graph: Graph, within: str) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module) among ``within.*``."""
    nodes = [n for n in graph if n == within or n.startswith(within + ".")]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graphs are small, recursion is fine
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in nodes:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            component.append(node)
            if len(component) > 1:
                found.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def sources() -> dict[str, str]:
    return sources_under("hango", "blueprints")


# What the inspector may import of the runtime: the one assembly path, the value types it hands out,
# the estimator, validation, compaction, the cache breakpoints, the ledger's records and the options
# (what each built-in tool does with files).
SEAM = frozenset(
    {
        "hango.agent.assembly",
        "hango.agent.cache_breakpoints",
        "hango.agent.options",
        "hango.agent.chain",
        "hango.agent.compaction",
        "hango.agent.deferral",
        "hango.agent.deps",
        "hango.agent.draft",
        "hango.agent.estimator",
        "hango.agent.ledger.causes",
        "hango.agent.ledger.record",
        "hango.agent.ledger.verdict",
        "hango.agent.overrides",
        "hango.agent.parts",
        "hango.agent.state",
        "hango.agent.tools.base",
        "hango.agent.validate",
    }
)


def package_graph(graph: Graph) -> str:
    """The import graph between packages, one ``a -> b, c`` line each: what a failure prints."""
    packages = {m for m in graph if any(other.startswith(m + ".") for other in graph)}

    def package_of(module: str) -> str:  # ``hango.agent.ledger.record`` → ``hango.agent.ledger``
        return module if module in packages else module.rpartition(".")[0]

    edges: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges.setdefault(package_of(module), set()).update(
            package_of(t) for t in targets if package_of(t) != package_of(module)
        )
    return "\n".join(f"{a} -> {', '.join(sorted(b))}" for a, b in sorted(edges.items()) if b)


def seam_breaches(graph: Graph) -> list[tuple[str, str]]:
    """Imports of the runtime by the inspector outside the seam, and any import of the inspector by the runtime."""
    inspector = [(a, b) for a, targets in graph.items() if a.startswith("hango.inspector") for b in targets]
    runtime = [(a, b) for a, targets in graph.items() if a.startswith("hango.agent") for b in targets]
    return sorted(
        [(a, b) for a, b in inspector if b.startswith("hango.agent") and b not in SEAM]
        + [(a, b) for a, b in runtime if b.startswith("hango.inspector")]
    )


def test_no_module_imports_a_higher_layer(sources: dict[str, str]) -> None:
    graph = import_graph(sources)
    assert back_edges(graph) == [], package_graph(graph)


def test_the_inspector_reaches_the_runtime_only_through_its_seam(sources: dict[str, str]) -> None:
    graph = import_graph(sources)
    assert seam_breaches(graph) == [], package_graph(graph)


def test_the_seam_check_fails_on_a_runtime_import_of_the_inspector(sources: dict[str, str]) -> None:
    """The runner reaching into the inspector, or the inspector into the run loop, is a breach."""
    broken = dict(sources)
    broken["hango.agent.runner"] += "\n\ndef _bad():\n    from hango.inspector.snapshot import Snapshot\n"
    broken["hango.inspector.trying"] += "\n\ndef _bad():\n    from hango.agent.runner import run\n"

    graph = import_graph(broken)

    assert ("hango.agent.runner", "hango.inspector.snapshot") in seam_breaches(graph)
    assert ("hango.agent.runner", "hango.inspector.snapshot") in back_edges(graph)
    assert ("hango.inspector.trying", "hango.agent.runner") in seam_breaches(graph)
    assert "hango.inspector" in next(
        line for line in package_graph(graph).splitlines() if line.startswith("hango.agent -> ")
    )


# The one module of the runtime that speaks to MCP servers: the MCP tool source. Every other module
# reads a server's tools through the toolset, as it reads a built-in's.
MCP_SOURCE = "hango.agent.middleware.mcp_tools"
# The packages of hango's features: the configuration reads settings and imports none of them.
FEATURE_PACKAGES = tuple(
    prefix
    for layer in LAYERS[1:]
    for prefix in layer
    if prefix.startswith("hango.") and "." not in prefix[6:]
)


def mcp_importers(graph: Graph) -> list[str]:
    """The modules of ``hango.agent`` other than the MCP source that import ``hango.mcp``."""
    return sorted(
        a
        for a, targets in graph.items()
        if a.startswith("hango.agent") and a != MCP_SOURCE and any(t.startswith("hango.mcp") for t in targets)
    )


def feature_imports_of_config(graph: Graph) -> list[str]:
    """What ``hango.config`` imports of a feature package."""
    return sorted(
        t for t in graph["hango.config"] if any(t == p or t.startswith(p + ".") for p in FEATURE_PACKAGES)
    )


def test_only_the_mcp_source_of_the_agent_imports_mcp(sources: dict[str, str]) -> None:
    graph = import_graph(sources)
    assert mcp_importers(graph) == []
    assert "hango.mcp" in {t.rpartition(".")[0] for t in graph[MCP_SOURCE]}


def test_the_mcp_check_fails_on_a_second_agent_module_importing_mcp(sources: dict[str, str]) -> None:
    broken = dict(sources)
    broken["hango.agent.turns"] += "\n\ndef _bad():\n    from hango.mcp.connection import Stop\n"

    assert mcp_importers(import_graph(broken)) == ["hango.agent.turns"]


def mcp_span_namers(sources: dict[str, str]) -> list[str]:
    """The modules of ``hango.agent`` other than the MCP source that name an MCP span attribute."""
    return sorted(
        name
        for name, text in sources.items()
        if name.startswith("hango.agent") and name != MCP_SOURCE and "names.MCP_" in text
    )


def test_a_served_tools_span_attributes_come_from_its_source_not_the_turn(sources: dict[str, str]) -> None:
    assert mcp_span_namers(sources) == []
    assert "names.MCP_SERVER" in sources[MCP_SOURCE]


def test_the_span_check_fails_on_an_agent_module_naming_an_mcp_attribute(sources: dict[str, str]) -> None:
    broken = dict(sources)
    broken["hango.agent.turns"] += "\n\nSERVED = {'server': names.MCP_SERVER}\n"

    assert mcp_span_namers(broken) == ["hango.agent.turns"]


def test_the_configuration_imports_no_feature_package(sources: dict[str, str]) -> None:
    assert feature_imports_of_config(import_graph(sources)) == []


def test_the_configuration_check_fails_on_an_import_of_a_feature_package(sources: dict[str, str]) -> None:
    assert {"hango.mcp", "hango.agent", "hango.inspector", "hango.providers"} <= set(FEATURE_PACKAGES)
    broken = dict(sources)
    broken["hango.config"] += "\n\ndef _bad():\n    from hango.mcp.catalog import read_catalog\n"

    assert feature_imports_of_config(import_graph(broken)) == ["hango.mcp.catalog"]


def test_there_is_no_import_circle_inside_hango(sources: dict[str, str]) -> None:
    assert cycles(import_graph(sources), "hango") == []


def test_every_module_has_a_layer(sources: dict[str, str]) -> None:
    for module in sources:
        layer_of(module)


def test_the_check_fails_on_a_back_edge(sources: dict[str, str]) -> None:
    """A lazy import of the agent inside a provider is both a back-edge and a circle."""
    broken = dict(sources)
    broken["hango.providers.base"] += "\n\ndef _bad():\n    from hango.agent.chain import Chain\n"

    graph = import_graph(broken)

    assert ("hango.providers.base", "hango.agent.chain") in back_edges(graph)
    assert any("hango.providers.base" in circle for circle in cycles(graph, "hango"))


def test_the_check_fails_on_a_type_checking_circle() -> None:
    """Imports under ``TYPE_CHECKING`` count: two modules naming each other's types are a circle."""
    graph = import_graph(
        {
            "hango": "",
            "hango.agent": "",
            "hango.agent.a": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from hango.agent.b import B\n",
            "hango.agent.b": "from hango.agent import a\n",
        }
    )

    assert cycles(graph, "hango") == [["hango.agent.a", "hango.agent.b"]]


def _sql_in(source: str) -> list[str]:
    """What in ``source`` speaks SQL: SQLAlchemy's query toolkit, hango's tables, executed statements."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for name in names:
                # ``sqlalchemy.engine`` is allowed: the runtime names Engine and Connection types.
                if name and (name.split(".")[0] == "sqlalchemy" and name != "sqlalchemy.engine"):
                    found.append(f"import {name} (line {node.lineno})")
                if name and name.startswith("hango.db.schema"):
                    found.append(f"import {name} (line {node.lineno})")
        if _on_a_connection(node):
            found.append(f"conn.{node.func.attr}() (line {node.lineno})")
    return found


def _on_a_connection(node: ast.AST) -> bool:
    """A statement executed on a connection: ``conn.execute(...)``, ``store.conn.scalar(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    receiver = node.func.value
    named = receiver.id if isinstance(receiver, ast.Name) else getattr(receiver, "attr", "")
    return node.func.attr in ("execute", "scalar", "scalars") and named in ("conn", "connection", "engine")


def test_the_agent_contains_no_sql(sources: dict[str, str]) -> None:
    """Every query lives in hango/store: the agent imports no SQL toolkit or table and executes nothing."""
    found = {m: _sql_in(s) for m, s in sources.items() if m.startswith(("hango.agent", "hango.inspector"))}

    assert {m: sql for m, sql in found.items() if sql} == {}


def test_the_sql_check_sees_a_query() -> None:
    query = "import sqlalchemy as sa\nfrom hango.db.schema import skills\nconn.execute(sa.select(skills))\n"

    assert len(_sql_in(query)) == 3


def test_bench_scripts_form_no_circle_and_shadow_no_standard_module() -> None:
    bench = sources_under("scripts/bench")
    graph = import_graph({**bench, "scripts": ""})

    assert cycles(graph, "scripts") == []
    assert [m for m in bench if m.rsplit(".", 1)[-1] in sys.stdlib_module_names] == []


def test_no_hango_module_shadows_a_standard_module(sources: dict[str, str]) -> None:
    """``hango/queue.py`` once shadowed ``queue``: each module is named for what it holds instead."""
    assert [m for m in sources if m.rsplit(".", 1)[-1] in sys.stdlib_module_names] == []


def test_the_runtime_below_the_web_layer_imports_no_flask(sources: dict[str, str]) -> None:
    """The agent, the providers and the store run outside a request: none of them imports Flask."""
    below_web = (
        "hango.agent",
        "hango.inspector",
        "hango.providers",
        "hango.store",
        "hango.messages",
        "hango.errors",
    )
    flask_users = [
        module
        for module, source in sources.items()
        if module.startswith(below_web)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            (name or "").split(".")[0] in ("flask", "flask_smorest", "werkzeug")
            for name in ([node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names])
        )
    ]
    assert flask_users == []


# --- the web layer: thin views, one door into the inspector ------------------------------------------

# The inspector's application layer: the one module of ``hango.inspector`` that ``blueprints/`` may import.
FRONT_DOOR = "hango.inspector.service"
# A view's body, in lines: the source lines its statements span, from the first statement after the
# docstring to the end of the last one, leaving out blank and comment-only lines. The signature, the
# decorators and the docstring are not the body; a statement ``ruff format`` splits counts every line.
MAX_VIEW_LINES = 10
HTTP_METHODS = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})


def is_blueprint(module: str) -> bool:
    """A module of ``blueprints/`` that routes: all but the package (the registry, which imports every
    blueprint), ``common`` and the ``*_schemas`` modules (what two areas share)."""
    name = module.rpartition(".")[2]
    return module.startswith("blueprints.") and name != "common" and not name.endswith("_schemas")


def web_breaches(graph: Graph) -> list[tuple[str, str]]:
    """Imports of a blueprint by any module of ``blueprints/`` but the registry, and of any inspector
    module but the front door."""
    return sorted(
        (a, b)
        for a, targets in graph.items()
        if a.startswith("blueprints.")
        for b in targets
        if is_blueprint(b) or (b.startswith("hango.inspector") and b != FRONT_DOOR)
    )


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _routed(function: ast.FunctionDef) -> bool:
    """Decorated with ``<blueprint>.route(...)``: a plain Flask view function."""
    return any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "route"
        for d in function.decorator_list
    )


def view_lengths(source: str) -> dict[str, int]:
    """``name:line`` → body length (``MAX_VIEW_LINES``' measure) of each view in ``source``: every function
    named for an HTTP method (a ``MethodView``'s, or one a factory makes into one) and every routed one."""
    lines = source.splitlines()
    found = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and (node.name in HTTP_METHODS or _routed(node)):
            body = node.body[1:] if _is_docstring(node.body[0]) else node.body
            spanned = lines[body[0].lineno - 1 : body[-1].end_lineno] if body else []
            found[f"{node.name}:{node.lineno}"] = sum(
                1 for line in spanned if line.strip() and not line.strip().startswith("#")
            )
    return found


def test_no_blueprint_imports_a_blueprint_or_the_inspector_past_its_front_door(
    sources: dict[str, str],
) -> None:
    assert web_breaches(import_graph(sources)) == []


def test_what_blueprints_share_routes_nothing(sources: dict[str, str]) -> None:
    """``common`` and the ``*_schemas`` modules hold no blueprint: a route there would dodge the rule above."""
    shared = [m for m in sources if m.startswith("blueprints.") and not is_blueprint(m)]
    blueprints_made = [
        module
        for module in shared
        for node in ast.walk(ast.parse(sources[module]))
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Blueprint"
    ]
    assert shared and blueprints_made == []


def test_every_view_fits_in_ten_lines(sources: dict[str, str]) -> None:
    """Views parse, call one function and serialize: what is longer belongs in a service."""
    long = {
        f"{module}.{view}": length
        for module, source in sources.items()
        if module.startswith("blueprints")
        for view, length in view_lengths(source).items()
        if length > MAX_VIEW_LINES
    }
    assert long == {}


def test_the_web_check_fails_on_a_blueprint_import_and_an_inspector_module(sources: dict[str, str]) -> None:
    """A blueprint reaching a sibling's blueprint or schemas, lazily too, or the inspector past its door."""
    broken = dict(sources)
    broken["blueprints.chat"] += "\n\ndef _bad():\n    from blueprints.runs import blp\n"
    broken["blueprints.run_schemas"] += "\nfrom blueprints import context\n"
    broken["blueprints.context"] += (
        "\nfrom hango.inspector.snapshot import Snapshot\nimport hango.inspector\n"
    )

    breaches = web_breaches(import_graph(broken))

    assert breaches == [
        ("blueprints.chat", "blueprints.runs"),
        ("blueprints.context", "hango.inspector"),
        ("blueprints.context", "hango.inspector.snapshot"),
        ("blueprints.run_schemas", "blueprints.context"),
    ]


def test_the_view_check_counts_the_body_not_its_docstring_decorators_or_blank_lines() -> None:
    statements = "\n".join(f"        x{n} = {n}" for n in range(9))
    source = f'''
class Item(MethodView):
    @blp.arguments(Body)
    @blp.response(200, Schema)
    def post(self, body):
        """One line.

        And more.
        """
        # why, not what

{statements}
        return answer(
            x0
        )


@blp.route("/health")
def health():
    return ok
'''
    assert view_lengths(source) == {"post:5": 12, "health:27": 1}  # 9 lines + a return formatted on 3


def test_the_front_door_holds_only_the_door(sources: dict[str, str]) -> None:
    """The door defines the request's ``Inspector`` (and the one proposal parser); the work, the ledger
    views, the commits and the telemetry live in the modules named for them."""
    tree = ast.parse(sources[FRONT_DOOR])
    defined = sorted(n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef))
    imported = import_graph(sources)[FRONT_DOOR]

    assert defined == ["Inspector", "proposal"]
    assert not imported & {"hango.telemetry", "hango.providers.prices", "hango.agent.assembly"}
    assert "commit" not in sources[FRONT_DOOR]


def test_views_reach_the_inspector_as_the_requests_one_inspector(sources: dict[str, str]) -> None:
    """No blueprint calls a door function with ``(deps, store, session, caller)``: it calls a method of
    ``tenancy.inspector()``, bound once per request; of the door it names only values and ``proposal``."""
    called = sorted(
        (module, node.func.attr)
        for module, source in sources.items()
        if module.startswith("blueprints.")
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "service"
        and node.func.attr not in ("TryBody", "proposal")
    )

    assert called == []
