"""HTTP plumbing of the edges: request headers, byte serving with ranges and validators,
zero-copy sends."""
