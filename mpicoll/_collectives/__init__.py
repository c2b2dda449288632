"""[2]-[4] Collective semantics, one MPI call each, and write-back."""
