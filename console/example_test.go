package console_test

import (
	"log"
	"net/http"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
)

// The console beside a running application: a read-only Broker takes no
// lock on the application's data directory.
func Example() {
	b, err := folio.OpenReadOnly("folio-data", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	http.Handle("/console/", http.StripPrefix("/console", console.New(b, &console.Options{Title: "orders service"})))
	log.Fatal(http.ListenAndServe("localhost:8080", nil))
}
