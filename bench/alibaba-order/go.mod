module muster/bench/alibaba-order

go 1.20
