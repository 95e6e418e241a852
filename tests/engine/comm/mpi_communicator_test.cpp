// What MpiCommunicator reads from the launcher's environment without
// starting MPI: the rank on this machine, which picks a rank's GPU.
#include "engine/comm/mpi_communicator.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace tidepool {
namespace {

// The variables the launchers set, cleared before and after each test.
class LocalRank : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) unsetenv(v);
  }
};

TEST_F(LocalRank, IsZeroWithoutALauncher) { EXPECT_EQ(MpiCommunicator::local_rank(), 0); }

TEST_F(LocalRank, ComesFromOpenMpiMpichOrSlurm) {
  setenv("SLURM_LOCALID", "2", 1);
  EXPECT_EQ(MpiCommunicator::local_rank(), 2);
  setenv("MPI_LOCALRANKID", "5", 1);
  EXPECT_EQ(MpiCommunicator::local_rank(), 5) << "MPICH's before Slurm's";
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
  EXPECT_EQ(MpiCommunicator::local_rank(), 3) << "Open MPI's first";
}

TEST_F(LocalRank, TextThatIsNotARankIsPassedOver) {
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "one", 1);
  setenv("MPI_LOCALRANKID", "-1", 1);
  EXPECT_EQ(MpiCommunicator::local_rank(), 0);
  setenv("SLURM_LOCALID", "4", 1);
  EXPECT_EQ(MpiCommunicator::local_rank(), 4);
}

}  // namespace
}  // namespace tidepool
