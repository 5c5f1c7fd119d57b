//===- MpiTransport.h - The MPI calls the process backend makes -*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// liboverlap_runtime_mpi.so, built only when CMake finds MPI, is the one
// library that links libmpi. It exports overlap_mpi_transport_get(), a table of
// plain C functions over opaque handles, and liboverlap_runtime.so loads it
// with dlopen when a process first joins an MPI job. So the runtime never
// depends on libmpi, no MPI type crosses the boundary (MPI_Comm is an int
// in MPICH and a pointer in Open MPI), and the threaded host backend works
// where MPI is not installed.
//
// Every int-returning function returns MPI's error code (0: MPI_SUCCESS);
// errorString turns one into text. Counts are bytes (MPI_BYTE).
//
//===----------------------------------------------------------------------===//

#ifndef OVERLAP_LIB_RUNTIME_PROCESS_MPITRANSPORT_H
#define OVERLAP_LIB_RUNTIME_PROCESS_MPITRANSPORT_H

#include <cstddef>
#include <cstdint>

extern "C" {

/// Bumped whenever the table changes; the runtime refuses another version.
#define OVERLAP_MPI_TRANSPORT_VERSION 1

typedef struct overlap_mpi_comm_s *overlap_mpi_comm;       // MPI_Comm
typedef struct overlap_mpi_request_s *overlap_mpi_request; // MPI_Request
typedef struct overlap_mpi_message_s *overlap_mpi_message; // MPI_Message

typedef struct overlap_mpi_transport {
  uint32_t version;
  /// MPI_Init_thread(MPI_THREAD_MULTIPLE) unless MPI is initialized
  /// (*initialized says whether this call did it), errors returned rather
  /// than fatal on MPI_COMM_WORLD, and its rank, size, whether the thread
  /// level is MPI_THREAD_MULTIPLE and the largest tag.
  int (*init)(int *rank, int *size, int *threadMultiple, int *tagUpperBound,
              int *initialized);
  int (*finalize)(void);
  /// MPI_Abort(MPI_COMM_WORLD, code): ends every process of the job.
  void (*abort)(int code);
  void (*errorString)(int code, char *text, size_t size);
  /// MPI_Get_library_version, for messages.
  void (*libraryVersion)(char *text, size_t size);
  /// MPI_Comm_dup(MPI_COMM_WORLD) (collective).
  int (*dupWorld)(overlap_mpi_comm *comm);
  /// MPI_Comm_split (collective over `parent`); `color` < 0 is
  /// MPI_UNDEFINED, which gives *comm = NULL.
  int (*split)(overlap_mpi_comm parent, int color, int key,
               overlap_mpi_comm *comm);
  int (*commRank)(overlap_mpi_comm comm, int *rank);
  /// MPI_Comm_free, and the handle.
  int (*commFree)(overlap_mpi_comm comm);
  /// MPI_Issend: complete only once the receiver has matched it.
  int (*issend)(overlap_mpi_comm comm, int dest, int tag, const void *data,
                int bytes, overlap_mpi_request *request);
  /// MPI_Test; when done, frees the handle and sets *request to NULL.
  int (*test)(overlap_mpi_request *request, int *done);
  /// MPI_Ibarrier.
  int (*ibarrier)(overlap_mpi_comm comm, overlap_mpi_request *request);
  /// MPI_Improbe; `source` and `tag` < 0 are MPI_ANY_SOURCE / MPI_ANY_TAG.
  /// When *found, *message is the matched message, of *bytes bytes from
  /// *sourceOut with *tagOut.
  int (*improbe)(overlap_mpi_comm comm, int source, int tag, int *found,
                 overlap_mpi_message *message, int *sourceOut, int *tagOut,
                 int *bytes);
  /// MPI_Mrecv of a matched message, and the handle.
  int (*mrecv)(overlap_mpi_message message, void *data, int bytes);
  /// MPI_Allreduce(MPI_MAX) of one int64 over `comm`.
  int (*allreduceMax)(overlap_mpi_comm comm, int64_t *value);
} overlap_mpi_transport;

/// The entry point of liboverlap_runtime_mpi.so.
typedef const overlap_mpi_transport *(*overlap_mpi_transport_fn)(void);
#define OVERLAP_MPI_TRANSPORT_SYMBOL "overlap_mpi_transport_get"
}

#endif // OVERLAP_LIB_RUNTIME_PROCESS_MPITRANSPORT_H
