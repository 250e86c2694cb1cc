"""An MCP session with `heapgraph mcp`, driven by the official MCP Python SDK (`mcp` on PyPI,
pinned in tests/setup.sh), as an agent's client would drive it: initialize, list the tools, open
the Java fixture, and find the planted leak's holder chain through findings, who_holds and
paths; then a call that fails (an id no dump has) and the session going on.

The answers are checked against what fixtures/java/make_fixtures.py planted
(fixtures/java/expected.json: 400 `com.example.Session` objects in the map
`SessionCache.sessions`, held by the static field `SessionCache.INSTANCE`), not against an
earlier answer of heapgraph's.

    python3 tests/e2e/mcp_client.py HEAPGRAPH_BINARY REPO_ROOT

Exits 0 when every check holds; a failed check raises, naming what it found.
"""

import asyncio
import json
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

TOOLS = {
    "open_dump",
    "summary",
    "top",
    "who_holds",
    "paths",
    "dominator_children",
    "object",
    "findings",
    "diff",
    "gpu",
}


def answer(result):
    """The JSON document of a successful call."""
    assert not result.is_error, f"the call failed: {result.content}"
    assert len(result.content) == 1, result.content
    return json.loads(result.content[0].text)


def planted(root):
    """The sessions' planting: their class, count, the holding class and its fields."""
    facts = json.loads((root / "fixtures/java/expected.json").read_text())["planted"]["sessions"]
    # "com.example.SessionCache.INSTANCE (static final SessionCache)"
    holder = facts["holder"].split(" ")[0]
    owner, static_field = holder.rsplit(".", 1)
    # "SessionCache.sessions, a java.util.HashMap<String, Session> (instance field)"
    map_field = facts["map"].split(",")[0].split(".")[1]
    map_type = facts["map"].split(", a ")[1].split("<")[0]
    return {
        "class": facts["class"],
        "count": facts["count"],
        "owner": owner,
        "static_field": static_field,
        "map_field": map_field,
        "map_type": map_type,
    }


async def session(binary, root):
    leak = planted(root)
    server = StdioServerParameters(command=binary, args=["mcp"], cwd=str(root))
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as client:
            started = await client.initialize()
            assert started.server_info.name == "heapgraph", started.server_info
            assert started.capabilities.tools is not None, started.capabilities
            assert "open_dump" in (started.instructions or ""), started.instructions

            # Every tool is listed, with a description that says when to use it and an input
            # schema of its arguments.
            listed = (await client.list_tools()).tools
            names = {tool.name for tool in listed}
            assert names == TOOLS, f"tools: {sorted(names)}"
            for tool in listed:
                assert tool.description and "Use it" in tool.description, tool
                schema = tool.input_schema
                assert schema.get("type") == "object", (tool.name, schema)
                properties = schema.get("properties", {})
                takes = {"open_dump": "path", "diff": "old"}.get(tool.name, "dump")
                assert takes in properties, (tool.name, schema)
                assert takes in schema.get("required", []), (tool.name, schema)
                if "limit" in properties:
                    assert "limit" not in schema.get("required", []), (tool.name, schema)

            opened = answer(
                await client.call_tool("open_dump", {"path": "fixtures/java/default.hprof.gz"})
            )
            assert opened["schema"] == "heapgraph.opened/1", opened
            assert opened["holds"] == "heap-dump", opened
            assert "who_holds" in opened["tools"] and "gpu" not in opened["tools"], opened
            dump = opened["id"]

            # The first finding names the planted holder: the field, its class, what it holds.
            found = answer(await client.call_tool("findings", {"dump": dump}))
            assert found["schema"] == "heapgraph.suspects/1", found["schema"]
            first = found["findings"][0]
            assert first["kind"] == "accumulation", first
            holder = first["holder"]
            assert holder["name"] == leak["map_field"], holder
            assert holder["owner"] == leak["owner"], holder
            assert holder["type"] == leak["map_type"], holder
            assert first["mostly"]["type"] == leak["class"], first
            assert first["mostly"]["count"] == leak["count"], first

            # who_holds by type: every chain from the roots to the largest session runs through
            # the static field and the map.
            held = answer(
                await client.call_tool(
                    "who_holds", {"dump": dump, "type": leak["class"].rsplit(".", 1)[1]}
                )
            )
            assert held["schema"] == "heapgraph.holders/1", held["schema"]
            assert held["target"]["type"] == leak["class"], held["target"]
            assert held["matches"] == leak["count"], held["matches"]
            assert 1 <= len(held["paths"]) <= 3, "3 chains at most by default"
            for chain in held["paths"]:
                edges = [step["edge"] for step in chain]
                at = edges.index(leak["static_field"])
                assert edges[at + 1] == leak["map_field"], edges
                assert chain[at]["type"] == leak["owner"], chain[at]
                assert chain[at + 1]["type"] == leak["map_type"], chain[at + 1]
                assert chain[-1]["id"] == held["target"]["id"], chain[-1]
            dominators = [step["type"] for step in held["dominator_chain"]]
            assert leak["owner"] in dominators and leak["map_type"] in dominators, dominators

            # paths of every session: all 400 reached, all through the one map.
            merged = answer(
                await client.call_tool("paths", {"dump": dump, "type": leak["class"]})
            )
            assert merged["schema"] == "heapgraph.paths/1", merged["schema"]
            assert (merged["targets"], merged["reached"]) == (leak["count"], leak["count"]), merged
            through = [node for node in merged["nodes"] if node.get("edge") == leak["map_field"]]
            assert len(through) == 1, through
            assert through[0]["type"] == leak["map_type"], through[0]
            assert through[0]["targets"] == leak["count"], through[0]

            # The holder's object, by the id an answer gave: the map is among its fields.
            fields = answer(
                await client.call_tool(
                    "object", {"dump": dump, "object": held["dominator_chain"][-1]["id"]}
                )
            )
            assert fields["schema"] == "heapgraph.references/1", fields["schema"]

            # Default limits are small, and `limit` asks for more.
            tops = answer(await client.call_tool("top", {"dump": dump}))
            assert len(tops["objects"]) == 10, len(tops["objects"])
            tops = answer(await client.call_tool("top", {"dump": dump, "limit": 3}))
            assert len(tops["objects"]) == 3, len(tops["objects"])

            # Failures are tool errors with the CLI's message, and the session goes on.
            missing = await client.call_tool("summary", {"dump": "d99"})
            assert missing.is_error, missing
            assert "no dump is open as d99" in missing.content[0].text, missing.content
            wrong = await client.call_tool("gpu", {"dump": dump})
            assert wrong.is_error, wrong
            assert "is a heap dump, not an allocation snapshot" in wrong.content[0].text, wrong
            absent = await client.call_tool("summary", {"dump": "fixtures/java/absent.hprof"})
            assert absent.is_error and "absent.hprof" in absent.content[0].text, absent.content
            bad = await client.call_tool("top", {"dump": dump, "limit": 0})
            assert bad.is_error and "limit=0" in bad.content[0].text, bad.content
            summary = answer(await client.call_tool("summary", {"dump": dump}))
            assert summary["schema"] == "heapgraph.summary/1", summary["schema"]
            assert len(summary["types"]) == 10, len(summary["types"])
    print("mcp session: every check held")


def main():
    binary, root = sys.argv[1], Path(sys.argv[2])
    asyncio.run(session(binary, root))


if __name__ == "__main__":
    main()
