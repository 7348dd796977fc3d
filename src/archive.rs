//! Safe readers for the archives the harness handles: the `git archive` tar
//! and the `.lbpkg` ZIP.
