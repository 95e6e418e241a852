// The dataset tests' check of a refused file: the reader throws a
// DatasetError whose message names the problem (the file, the count).
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "datasets/dataset.h"

namespace tidepool::testing {

// Runs `f`, expects a DatasetError whose message contains every one of `parts`.
template <class F>
void expect_dataset_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no DatasetError";
  } catch (const datasets::DatasetError& e) {
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
  }
}

}  // namespace tidepool::testing
