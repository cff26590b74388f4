#pragma once

// `llmc-run generate ...` (argv[0] is "generate"); returns the exit code.
int generateMain(int argc, char **argv);
