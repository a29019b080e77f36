// Package pb holds the generated protobuf and gRPC code of the cluster
// control plane, from cluster.proto (package weir.cluster.v1). The
// generated files are committed, so building weir needs no protoc.
//
// To regenerate after editing cluster.proto, install protoc 3.21.12
// (Debian's protobuf-compiler) and the plugins at the versions below, then
// run go generate in this folder:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative cluster.proto
