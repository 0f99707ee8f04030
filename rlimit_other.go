//go:build !unix

package folio

// openFilesLimit reports no limit on open files where the system has no
// RLIMIT_NOFILE.
func openFilesLimit() (uint64, bool) { return 0, false }
