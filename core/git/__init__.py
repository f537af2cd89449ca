"""Git plumbing: the one place that runs git and reads and writes objects, trees and refs.

`run` runs git (foreground and background) in an environment that cannot be pointed elsewhere;
`objects` writes git's object format; `reader` reads objects through one `cat-file` session;
`refs` reads and moves refs; `packs` moves objects between repositories; `transport` talks to
remotes; `version` knows the installed git's version; `plumbing` gathers the object, ref and
pack calls under one name.
"""
