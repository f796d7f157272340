// zlib from the system (Debian: zlib1g-dev), for gzip response compression.
#include <zlib.h>
