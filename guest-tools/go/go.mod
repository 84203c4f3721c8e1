// The Go guest tools of toolhost: the kit and the tools, one module with
// the standard library only (nothing is fetched; GOPROXY=off in build.sh).
// go 1.24: the first release with //go:wasmexport.
module toolhost.local/guest

go 1.24
