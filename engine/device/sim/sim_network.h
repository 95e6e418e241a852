// The network between the sim device's N simulated GPUs: what a gradient
// all-reduce costs in time (the sim device moves no bytes).
//
// The defaults are AccUDNN's testbed (§6.1): "Eight servers
// interconnected with 10Gbps Ethernet", one M40 per server, so every
// all-reduce crosses the Ethernet. The paper gives no latency; 20 µs is the
// application-to-application latency Hurwitz and Feng measured over 10 GbE
// with TCP ("Initial End-to-End Performance Evaluation of 10-Gigabit
// Ethernet", Hot Interconnects 11, 2003), the transport AccUDNN's sockets
// use.
#pragma once

#include <cstddef>

namespace tidepool {

struct SimNetwork {
  // Bandwidth each way of every rank's link, in Gbit/s (1e9 bits per
  // second, as Ethernet is rated): 10 Gbit/s moves 1.25e9 bytes a second.
  // Not GB/s, which the host link's figures elsewhere are in.
  double gbit_per_s = 10;
  // Per message: what a step of the ring pays before its bytes flow, µs.
  double latency_us = 20;
};

// The time of a ring all-reduce of `bytes` over `ranks` ranks, µs: a
// reduce-scatter and an all-gather of N − 1 steps each, every step moving
// bytes / N between neighbours at once, so
//
//   2 (N − 1) (latency + (bytes / N) / bandwidth)
//
// (Patarasuk and Yuan, "Bandwidth optimal all-reduce algorithms for
// clusters of workstations", JPDC 69(2), 2009; Thakur, Rabenseifner and
// Gropp, "Optimization of collective communication operations in MPICH",
// IJHPCA 19(1), 2005, whose α-β cost this is with the reduction's
// arithmetic left out: a GPU sums bytes / N far faster than 10 GbE brings
// them). Each rank sends and receives 2 (N − 1) / N of the bytes, the least
// any all-reduce can (Patarasuk and Yuan), and as much as the sharded
// parameter server of AccUDNN §6.3 C moves through each server's link. One
// rank: 0. Throws std::invalid_argument for ranks < 1 or a bandwidth that is
// not positive.
double ring_all_reduce_us(std::size_t bytes, int ranks, const SimNetwork& network);

}  // namespace tidepool
