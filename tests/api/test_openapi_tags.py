"""The OpenAPI document names each API area once."""

from __future__ import annotations

from collections import Counter


def test_openapi_tags_are_not_duplicated(client) -> None:
    spec = client.get("/openapi.json").get_json()
    descriptions = Counter(tag.get("description") for tag in spec["tags"])
    names = Counter(tag["name"] for tag in spec["tags"])

    assert [d for d, n in descriptions.items() if n > 1] == []
    assert [t for t, n in names.items() if n > 1] == []
    tagged = {op["tags"][0] for path in spec["paths"].values() for op in path.values() if "tags" in op}
    assert tagged <= set(names)
    assert spec["paths"]["/v1/sessions/{session_id}/context/try"]["post"]["tags"] == ["context"]
