"""Every page of a tools/list, for the Python SDK clients of the tests (stdio_client.py,
desktop_client.py)."""


async def all_tool_names(session):
    """The names of every tool `session` lists, following cursors, sorted."""
    names, cursor = [], None
    while True:
        page = await session.list_tools(params={"cursor": cursor} if cursor else None)
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return sorted(names)
