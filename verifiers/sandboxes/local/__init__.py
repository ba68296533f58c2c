"""The local backend: bubblewrap namespaces, cgroups, seccomp and a per-sandbox agent."""
