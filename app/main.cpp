// The tidepool executable: everything is in app/cli.cpp.
#include "app/cli.h"

int main(int argc, char** argv) { return tidepool::app::run_cli(argc, argv); }
