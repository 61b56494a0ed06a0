package main

import "C"

// buildStamp names the build inside the binary (`strings libkrabka_coord.so.2.0.0 | grep
// krabka-coord-build`). Release builds set it with -ldflags -X (build.sh --release: version,
// target, commit); nothing reads it at run time. Kept alive the same way as cVersion.
var buildStamp = "krabka-coord-build: development"

var cBuildStamp = C.CString(buildStamp)
