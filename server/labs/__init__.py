"""Lab machines: the identities (a name and a token) with which lab machines join the server."""
