/* Muster's version, reported by `muster version` and the debug endpoint. */
#ifndef MUSTER_VERSION_H
#define MUSTER_VERSION_H

#define MUSTER_VERSION "0.1.0-dev"

#endif
