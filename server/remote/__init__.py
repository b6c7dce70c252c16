"""Remote runs: a model served by a lab machine and measured from a client under network profiles."""
