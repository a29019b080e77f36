# Conveniences; the README's commands work without make.
.PHONY: build demo test vet bench

build:
	go build -o bin/weir ./cmd/weir

demo:
	go run ./cmd/weir run demo

test:
	go test -race ./...

vet:
	go vet ./...

bench: build
	./bin/weir bench keyed-sum --records 60000000 --keys 1000 --parallelism 2 --runs 5
	./bin/weir bench keyed-sum --records 60000000 --keys 1000 --parallelism 2 --runs 5 --checkpoint-interval 1s
