"""How user code's child process is kept in (:mod:`..contained` is the command's side): procs (``/proc``, ``prctl``,
cgroups), keeper (the subreaper between the command and the child), confine (what the child takes from itself),
seccomp (no signal, trace or memory access to the command), serve (the child's request loop), wire (replies as
JSON, never pickles)."""
