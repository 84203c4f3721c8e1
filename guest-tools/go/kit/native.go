//go:build !wasip1

package kit

import "errors"

// notCapable is WASI's ENOTCAPABLE, which only the wasip1 port has; a
// native build never sees it.
var notCapable = errors.New("not capable")
