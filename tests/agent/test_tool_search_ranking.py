"""tool_search's ranking: the right tool among the first five, the regex rule, a stable order, one index per
catalog, and the queries and limits it refuses."""

from __future__ import annotations

import pytest

from hango import tool_search
from hango.tool_search import BadSearch, SearchableTool, ToolIndex, parameter_names, regex_of, words
from tests.support.tool_catalog import catalog_tools, quality, queries

TOOLS = catalog_tools()


def tool(name: str, description: str = "", parameters: tuple[str, ...] = (), server: str | None = None):
    return SearchableTool(name, f"tool:{name}", server, description, parameters)


def names(found) -> list[str]:
    return [f.tool.name for f in found]


def test_the_catalog_has_300_tools_on_10_servers_and_50_queries_whose_tools_exist() -> None:
    asked = queries()
    known = {t.name for t in TOOLS}

    assert len(TOOLS) == len(known) == 300
    assert len({t.server for t in TOOLS}) == 10
    assert len(asked) == 50
    assert all(q.expected and q.expected <= known for q in (*asked, *queries("held_out_queries")))


def test_the_right_tool_is_in_the_top_5_for_at_least_90_percent_of_queries() -> None:
    figure = quality(ToolIndex(TOOLS), queries())

    print(f"\ntool_search quality: {figure.rates()}\n" + "\n".join(figure.misses))
    assert figure.queries == 50
    assert figure.top5 == figure.queries - len(figure.misses)
    assert figure.top5 / figure.queries >= 0.90, figure.misses


def test_queries_written_after_the_ranker_mostly_find_their_tool_in_the_top_5() -> None:
    figure = quality(ToolIndex(TOOLS), queries("held_out_queries"))

    print(f"\ntool_search held-out quality: {figure.rates()}\n" + "\n".join(figure.misses))
    assert figure.top5 / figure.queries >= 0.80, figure.misses


def test_a_ranker_that_ignores_the_query_misses_the_quality_figure(monkeypatch) -> None:
    index = ToolIndex(TOOLS)
    ranked = index._ranked
    monkeypatch.setattr(index, "_ranked", lambda query: ranked("list"))

    assert quality(index, queries()).top5 / 50 < 0.5


def test_listing_lists_and_list_meet_and_stop_words_are_dropped() -> None:
    assert words("listing") == words("lists") == words("list") == words("listed")
    assert words("deleting the files") == words("delete file")
    assert words("what is my") == []


def test_names_split_on_underscores_dashes_dots_slashes_and_camel_case() -> None:
    assert words("get_pod-logs.v2/now") == words("get pod logs v2 now")
    assert set(words("listPullRequests")) >= {"list", "pull", "request"}


def test_parameter_names_are_read_one_level_down() -> None:
    schema = {
        "type": "object",
        "properties": {
            "owner": {"type": "string"},
            "filter": {"type": "object", "properties": {"labelName": {"type": "string"}}},
            "files": {"type": "array", "items": {"type": "object", "properties": {"path": {}}}},
        },
    }

    assert parameter_names(schema) == ("owner", "filter", "labelName", "files", "path")
    assert parameter_names({"type": "object"}) == ()


def test_a_tool_is_found_by_its_parameter_names_and_its_server() -> None:
    index = ToolIndex(
        [tool("a__run", "Run it.", ("warehouseRegion",)), tool("b__go", "Go.", (), server="zebra")]
    )

    assert names(index.search("warehouse region")) == ["a__run"]
    assert names(index.search("zebra")) == ["b__go"]


def test_results_are_best_first_with_ties_broken_by_name() -> None:
    same = [tool(n, "Close the ticket.") for n in ("c_close", "a_close", "b_close")]
    index = ToolIndex([*same, tool("z_close_ticket", "Close the ticket.")])

    found = index.search("close ticket")

    assert names(found) == ["z_close_ticket", "a_close", "b_close", "c_close"]
    assert [f.score for f in found] == sorted((f.score for f in found), reverse=True)
    assert found[1].score == found[2].score == found[3].score


def test_the_same_catalog_in_any_order_gives_the_same_results() -> None:
    forward, backward = ToolIndex(TOOLS), ToolIndex(reversed(TOOLS))

    for query in queries():
        assert forward.search(query.text, 20) == backward.search(query.text, 20)


def test_the_index_is_built_once_per_catalog_whatever_its_order() -> None:
    index = ToolIndex.of(TOOLS)

    assert ToolIndex.of(list(reversed(TOOLS))) is index
    assert ToolIndex.of(TOOLS[1:]) is not index


def test_the_kept_indexes_are_bounded_least_recently_used_first(monkeypatch) -> None:
    monkeypatch.setattr(tool_search, "CACHED_INDEXES", 2)
    first = ToolIndex.of([tool("first")])
    second = ToolIndex.of([tool("second")])
    assert ToolIndex.of([tool("first")]) is first  # used again: now the newest
    ToolIndex.of([tool("third")])

    assert ToolIndex.of([tool("first")]) is first
    assert ToolIndex.of([tool("second")]) is not second


def test_a_regex_query_matches_names_first_then_descriptions_then_parameters_case_insensitively() -> None:
    index = ToolIndex(
        [
            tool("zz_param", "Nothing here.", ("issueKey",)),
            tool("b_issue_get", "Get one."),
            tool("a_issue_list", "List them."),
            tool("m_describe", "Describes an ISSUE."),
            tool("q_other", "Unrelated."),
        ]
    )

    found = index.search("iss?ue")

    assert names(found) == ["a_issue_list", "b_issue_get", "m_describe", "zz_param"]
    assert names(index.search("^a_.*list$|^b_")) == ["a_issue_list", "b_issue_get"]


def test_the_regex_rule() -> None:
    assert regex_of("github__.*pull") is not None
    assert regex_of("list (issues|tickets)") is not None
    assert regex_of("list issues") is None  # no metacharacter: words
    assert regex_of("what is on my agenda today?") is None  # a question, not a regex
    assert regex_of("list issues [") is None  # does not compile: words
    assert regex_of(".{1000}") is None  # past hango's RE2 program-size bound: words


def test_a_query_that_looks_like_a_regex_but_does_not_compile_is_searched_as_words() -> None:
    index = ToolIndex(TOOLS)

    assert index.search("open a jira ticket [bug") == index.search("open a jira ticket bug")


def test_a_regex_that_matches_no_tool_is_searched_as_words() -> None:
    index = ToolIndex(TOOLS)

    found = index.search("scale the deployment (kubernetes)")

    assert found and found[0].tool.name == "kubernetes__scale_deployment"


def test_the_limit_caps_the_results() -> None:
    index = ToolIndex(TOOLS)

    assert len(index.search("list", 1)) == 1
    assert len(index.search("list", 20)) == 20
    assert len(index.search("list")) == 5
    assert len(index.search("^github__", 20)) == 20


def test_a_query_with_no_known_word_finds_nothing() -> None:
    assert ToolIndex(TOOLS).search("xylophone quokka") == ()
    assert ToolIndex([]).search("anything") == ()


@pytest.mark.parametrize(
    ("query", "limit", "says"),
    [
        ("", 5, "empty"),
        ("   \n", 5, "empty"),
        ("x" * 501, 5, "at most 500"),
        ("list", 0, "from 1 to 20"),
        ("list", 21, "from 1 to 20"),
        ("list", True, "from 1 to 20"),
        ("list", "5", "from 1 to 20"),
    ],
)
def test_a_bad_query_or_limit_is_refused_with_a_clear_message(query, limit, says) -> None:
    with pytest.raises(BadSearch, match=says) as refused:
        ToolIndex(TOOLS).search(query, limit)

    assert isinstance(refused.value, ValueError)


def test_a_query_of_500_characters_is_accepted() -> None:
    assert ToolIndex(TOOLS).search(("list issues " * 50)[:500])
