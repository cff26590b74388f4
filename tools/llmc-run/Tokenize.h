#pragma once

// `llmc-run tokenize ...` (argv[0] is "tokenize"); returns the exit code.
int tokenizeMain(int argc, char **argv);
