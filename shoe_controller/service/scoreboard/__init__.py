"""The live scoreboard page (docs/scoreboard.md): the five roads, the ask road, the shoe's
statistics and the round being dealt, in a browser, updated as each event is stored.

`server` (aiohttp, imported only when `[scoreboard] listen` is set), `stream` (the messages),
`svg` (the roads drawn; shoectl uses it too), `history` (the journal read back at start) and
`static/` (the page: plain HTML, CSS and a small script, no framework, nothing from outside).
"""
