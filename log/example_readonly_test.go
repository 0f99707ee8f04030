package log_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/foliolog/folio/log"
	"github.com/foliolog/folio/record"
)

// ExampleLog_Refresh follows a writer from a read-only log, as a tool in
// another process would: the reader sees the writer's appends once it
// refreshes, and WaitChan (here for offset 1) fires then.
func ExampleLog_Refresh() {
	dir, err := os.MkdirTemp("", "folio-log-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	appendValue := func(l *log.Log, v string) {
		b, err := record.NewBuilder(nil)
		if err != nil {
			panic(err)
		}
		if err := b.Append(record.Record{Value: []byte(v), Timestamp: 1700000000000}); err != nil {
			panic(err)
		}
		batch, err := b.Build(nil)
		if err != nil {
			panic(err)
		}
		if _, _, err := l.Append(batch); err != nil {
			panic(err)
		}
	}

	writer, err := log.Open(nil, dir, &log.Options{FlushPolicy: log.FlushNone}, log.State{})
	if err != nil {
		panic(err)
	}
	defer writer.Close()
	appendValue(writer, "first")

	reader, err := log.Open(nil, dir, &log.Options{ReadOnly: true}, log.State{})
	if err != nil {
		panic(err)
	}
	defer reader.Close()
	fmt.Println("reader's end:", reader.LogEndOffset())
	_, _, err = reader.Append(nil)
	fmt.Println("append refused:", errors.Is(err, log.ErrReadOnly))

	ready, cancel := reader.WaitChan(1)
	defer cancel()
	appendValue(writer, "second")
	fmt.Println("before Refresh:", reader.LogEndOffset())
	if err := reader.Refresh(); err != nil {
		panic(err)
	}
	<-ready
	fmt.Println("after Refresh:", reader.LogEndOffset())
	// Output:
	// reader's end: 1
	// append refused: true
	// before Refresh: 1
	// after Refresh: 2
}
