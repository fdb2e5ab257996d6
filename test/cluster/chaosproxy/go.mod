module muster.dev/test/cluster/chaosproxy

go 1.26
