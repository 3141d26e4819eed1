package js_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/muster-gg/muster/clients/js"
)

// A game serves the client beside its page, which imports it with
// import { connect } from './client/muster.js'.
func ExampleHandler() {
	mux := http.NewServeMux()
	mux.Handle("/client/", http.StripPrefix("/client/", js.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := http.Get(srv.URL + "/client/muster.js")
	if err != nil {
		fmt.Println(err)
		return
	}
	res.Body.Close()
	fmt.Println(res.Status, res.Header.Get("Content-Type"))
	// Output: 200 OK text/javascript; charset=utf-8
}
