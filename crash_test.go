package folio

// childEnv names the environment variable that makes the test binary a
// child of a crash or lock test.
const childEnv = "FOLIO_TEST_CHILD"
