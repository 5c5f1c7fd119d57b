//===- MpiTransport.cpp - liboverlap_runtime_mpi.so ------------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The MPI calls of the process backend (MpiTransport.h), compiled against
// the mpi.h that CMake found and linked with its libmpi. Nothing else of the
// runtime is here: liboverlap_runtime.so dlopens this library.
//
//===----------------------------------------------------------------------===//

// The C API only: Open MPI's and MPICH's mpi.h include their deprecated C++
// bindings otherwise.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include "MpiTransport.h"

#include <cstdio>
#include <cstring>
#include <new>

struct overlap_mpi_comm_s {
  MPI_Comm comm;
};
struct overlap_mpi_request_s {
  MPI_Request request;
};
struct overlap_mpi_message_s {
  MPI_Message message;
};

namespace {

int init(int *rank, int *size, int *threadMultiple, int *tagUpperBound,
         int *initialized) {
  int flag = 0, level = MPI_THREAD_SINGLE;
  *initialized = 0;
  if (int rc = MPI_Initialized(&flag))
    return rc;
  if (!flag) {
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &level))
      return rc;
    *initialized = 1;
  } else if (int rc = MPI_Query_thread(&level)) {
    return rc;
  }
  *threadMultiple = level == MPI_THREAD_MULTIPLE;
  if (int rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN))
    return rc;
  if (int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank))
    return rc;
  if (int rc = MPI_Comm_size(MPI_COMM_WORLD, size))
    return rc;
  void *value = nullptr;
  flag = 0;
  if (int rc = MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag))
    return rc;
  *tagUpperBound = flag && value ? *static_cast<int *>(value) : 32767;
  return MPI_SUCCESS;
}

int finalize() {
  int flag = 0;
  MPI_Finalized(&flag);
  return flag ? MPI_SUCCESS : MPI_Finalize();
}

void abortJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

void errorString(int code, char *text, size_t size) {
  char buffer[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS)
    std::snprintf(buffer, sizeof buffer, "MPI error %d", code);
  std::snprintf(text, size, "%s", buffer);
}

void libraryVersion(char *text, size_t size) {
  char buffer[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(buffer, &length) != MPI_SUCCESS)
    buffer[0] = 0;
  // The first line names the implementation and its version.
  if (char *newline = std::strchr(buffer, '\n'))
    *newline = 0;
  std::snprintf(text, size, "%s", buffer);
}

int wrapComm(MPI_Comm comm, overlap_mpi_comm *out) {
  *out = new (std::nothrow) overlap_mpi_comm_s{comm};
  if (*out)
    return MPI_SUCCESS;
  MPI_Comm_free(&comm);
  return MPI_ERR_NO_MEM;
}

int dupWorld(overlap_mpi_comm *out) {
  MPI_Comm comm;
  if (int rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm))
    return rc;
  return wrapComm(comm, out);
}

int split(overlap_mpi_comm parent, int color, int key, overlap_mpi_comm *out) {
  MPI_Comm comm;
  *out = nullptr;
  if (int rc = MPI_Comm_split(parent->comm, color < 0 ? MPI_UNDEFINED : color,
                              key, &comm))
    return rc;
  if (comm == MPI_COMM_NULL)
    return MPI_SUCCESS;
  return wrapComm(comm, out);
}

int commRank(overlap_mpi_comm comm, int *rank) {
  return MPI_Comm_rank(comm->comm, rank);
}

int commFree(overlap_mpi_comm comm) {
  int rc = MPI_Comm_free(&comm->comm);
  delete comm;
  return rc;
}

int wrapRequest(int rc, MPI_Request request, overlap_mpi_request *out) {
  *out = nullptr;
  if (rc)
    return rc;
  *out = new (std::nothrow) overlap_mpi_request_s{request};
  return *out ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

int issend(overlap_mpi_comm comm, int dest, int tag, const void *data,
           int bytes, overlap_mpi_request *out) {
  MPI_Request request;
  int rc = MPI_Issend(data, bytes, MPI_BYTE, dest, tag, comm->comm, &request);
  return wrapRequest(rc, request, out);
}

int test(overlap_mpi_request *request, int *done) {
  *done = 0;
  if (!*request) {
    *done = 1;
    return MPI_SUCCESS;
  }
  if (int rc = MPI_Test(&(*request)->request, done, MPI_STATUS_IGNORE))
    return rc;
  if (*done) {
    delete *request;
    *request = nullptr;
  }
  return MPI_SUCCESS;
}

int ibarrier(overlap_mpi_comm comm, overlap_mpi_request *out) {
  MPI_Request request;
  int rc = MPI_Ibarrier(comm->comm, &request);
  return wrapRequest(rc, request, out);
}

int improbe(overlap_mpi_comm comm, int source, int tag, int *found,
            overlap_mpi_message *message, int *sourceOut, int *tagOut,
            int *bytes) {
  MPI_Message matched;
  MPI_Status status;
  *found = 0;
  if (int rc = MPI_Improbe(source < 0 ? MPI_ANY_SOURCE : source,
                           tag < 0 ? MPI_ANY_TAG : tag, comm->comm, found,
                           &matched, &status))
    return rc;
  if (!*found)
    return MPI_SUCCESS;
  *sourceOut = status.MPI_SOURCE;
  *tagOut = status.MPI_TAG;
  if (int rc = MPI_Get_count(&status, MPI_BYTE, bytes))
    return rc;
  *message = new (std::nothrow) overlap_mpi_message_s{matched};
  if (!*message) {
    // Take the message anyway, so it is not left matched and unreceived.
    char ignored;
    MPI_Mrecv(&ignored, 0, MPI_BYTE, &matched, MPI_STATUS_IGNORE);
    *found = 0;
    return MPI_ERR_NO_MEM;
  }
  return MPI_SUCCESS;
}

int mrecv(overlap_mpi_message message, void *data, int bytes) {
  int rc =
      MPI_Mrecv(data, bytes, MPI_BYTE, &message->message, MPI_STATUS_IGNORE);
  delete message;
  return rc;
}

int allreduceMax(overlap_mpi_comm comm, int64_t *value) {
  int64_t in = *value;
  return MPI_Allreduce(&in, value, 1, MPI_INT64_T, MPI_MAX, comm->comm);
}

const overlap_mpi_transport kTransport = {
    OVERLAP_MPI_TRANSPORT_VERSION,
    init,
    finalize,
    abortJob,
    errorString,
    libraryVersion,
    dupWorld,
    split,
    commRank,
    commFree,
    issend,
    test,
    ibarrier,
    improbe,
    mrecv,
    allreduceMax,
};

} // namespace

extern "C" __attribute__((visibility("default"))) const overlap_mpi_transport *
overlap_mpi_transport_get() {
  return &kTransport;
}
