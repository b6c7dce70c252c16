"""OpenCL C sources of the OpenCL backend, one kernel per file (a package so the .cl files ship with it)."""
