package api_test

import "runtime"

func runtimeGosched() { runtime.Gosched() }
