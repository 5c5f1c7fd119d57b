//===- TcpTransport.cpp - The process transport over TCP --------*- C++ -*-===//
//
// Part of the Overlap project.
//
//===----------------------------------------------------------------------===//
//
// The table of MpiTransport.h served over TCP sockets, for the processes of
// a job that no MPI launcher started (torchrun): the same calls, the same
// semantics as far as the process backend uses them, so ranks as processes
// and the CUDA executor's agreement run unchanged on it.
//
// Joining (the sockets between every pair of ranks, one each, so the
// messages between two ranks arrive in the order they were sent: MPI's
// non-overtaking rule) is TcpBootstrap.cpp's.
//
// Messages: one thread per process reads every socket into a queue that
// improbe matches by communicator, source and tag. A synchronous send
// completes when the receiver's mrecv acknowledges it. Communicators are
// ids every process derives alike (no message needed); barriers, splits and
// the max exchange their values over the communicator's internal id, which
// user probes never match. A peer whose connection closes before it said
// goodbye is dead: every call that waits on it fails with the reason,
// instead of waiting for ever; abort tells every peer, which ends too.
//
//===----------------------------------------------------------------------===//

#include "ProcessBackend.h"
#include "TcpJob.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace overlap;

using namespace overlap::process::tcp;

namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x & ~kInternal;
}

} // namespace

//===----------------------------------------------------------------------===//
// Messages
//===----------------------------------------------------------------------===//

bool Job::sendFrame(int to, const Frame &frame, const void *data) {
  Peer &peer = *peers_[to];
  std::lock_guard<std::mutex> lock(peer.write);
  if (peer.fd < 0)
    return false;
  return writeAll(peer.fd, &frame, sizeof frame) &&
         (!frame.bytes || writeAll(peer.fd, data, frame.bytes));
}

std::string Job::deadReason(int peer) const {
  if (!peers_[peer]->dead())
    return "";
  if (!peers_[peer]->broken.empty())
    return peers_[peer]->broken;
  return "rank " + std::to_string(peer) +
         "'s connection closed before it finished (it exited, crashed or "
         "was killed)";
}

void Job::progress() {
  std::vector<pollfd> fds;
  std::vector<int> ranks;
  while (!stopping_.load()) {
    fds.assign(1, pollfd{wake_[0], POLLIN, 0});
    ranks.assign(1, -1);
    for (int r = 0; r < size; ++r)
      if (r != rank && peers_[r]->fd >= 0 && !peers_[r]->closed) {
        fds.push_back(pollfd{peers_[r]->fd, POLLIN, 0});
        ranks.push_back(r);
      }
    int ready = ::poll(fds.data(), fds.size(), 1000);
    if (ready <= 0)
      continue;
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      int r = ranks[i];
      if (readFrom(r))
        continue;
      // Closed (its fd is closed at finalize): after its goodbye that is
      // the end of a finished peer, before it the death of one.
      std::lock_guard<std::mutex> lock(mutex_);
      peers_[r]->closed = true;
      changed_.notify_all();
    }
  }
}

bool Job::readFrom(int r) {
  Peer &peer = *peers_[r];
  ssize_t n =
      ::recv(peer.fd, peer.reader.room(), peer.reader.wanted(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR))
    return true;
  if (n <= 0)
    return false;
  switch (peer.reader.received(static_cast<size_t>(n))) {
  case FrameReader::More:
    return true;
  case FrameReader::Malformed: {
    // Nothing more from it can be trusted: it is dropped as a dead peer,
    // with the reason, and every call waiting on it fails with that.
    std::fprintf(stderr, "overlap: rank %d: rank %d sent %s; dropping it\n",
                 rank, r, peer.reader.why().c_str());
    std::lock_guard<std::mutex> lock(mutex_);
    peer.broken = "rank " + std::to_string(r) + " sent " + peer.reader.why();
    return false;
  }
  case FrameReader::Complete:
    break;
  }
  Frame frame = peer.reader.frame();
  deliver(r, peer.reader.take(), frame);
  return true;
}

void Job::deliver(int r, std::unique_ptr<overlap_mpi_message_s> message,
                  const Frame &frame) {
  switch (frame.kind) {
  case Abort: {
    // An abort never ends a process with success, whatever code it names.
    int code = frame.tag > 0 && frame.tag < 256 ? frame.tag : 1;
    std::fprintf(stderr,
                 "overlap: rank %d: rank %d ended the job (abort, code %d; "
                 "exit code %d)\n",
                 rank, r, frame.tag, code);
    std::fflush(stderr);
    std::_Exit(code);
  }
  case Data: {
    message->comm = frame.comm;
    message->source = r;
    message->tag = frame.tag;
    message->sendId = frame.sendId;
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(*message));
    break;
  }
  case Ack: {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sends_.find(frame.sendId);
    if (it != sends_.end()) {
      it->second->done = true;
      sends_.erase(it);
    }
    break;
  }
  case Bye: {
    std::lock_guard<std::mutex> lock(mutex_);
    peers_[r]->bye = true;
    break;
  }
  default:
    break;
  }
  changed_.notify_all();
}

std::list<overlap_mpi_message_s>::iterator Job::find(uint64_t comm, int source,
                                                     int tag) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it)
    if (it->comm == comm && (source < 0 || it->source == source) &&
        (tag < 0 || it->tag == tag))
      return it;
  return queue_.end();
}

int Job::issend(overlap_mpi_comm comm, int dest, int tag, const void *data,
                int bytes, overlap_mpi_request *request) {
  if (!comm || !request || dest < 0 ||
      dest >= static_cast<int>(comm->world.size()) || bytes < 0)
    return fail("issend: invalid communicator, rank or count");
  int to = comm->world[static_cast<size_t>(dest)];
  auto *sent = new overlap_mpi_request_s;
  sent->dest = to;
  sent->sendId = nextSendId_.fetch_add(1);
  if (to == rank) {
    overlap_mpi_message_s message;
    message.comm = comm->id;
    message.source = rank;
    message.tag = tag;
    message.sendId = sent->sendId;
    message.data.assign(static_cast<const char *>(data),
                        static_cast<size_t>(bytes));
    std::lock_guard<std::mutex> lock(mutex_);
    sends_[sent->sendId] = sent;
    queue_.push_back(std::move(message));
    changed_.notify_all();
    *request = sent;
    return 0;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::string why = deadReason(to); !why.empty()) {
      delete sent;
      return fail("a send to rank " + std::to_string(to) + ": " + why);
    }
    sends_[sent->sendId] = sent;
  }
  Frame frame;
  frame.kind = Data;
  frame.tag = tag;
  frame.comm = comm->id;
  frame.sendId = sent->sendId;
  frame.bytes = static_cast<uint64_t>(bytes);
  if (!sendFrame(to, frame, data)) {
    std::lock_guard<std::mutex> lock(mutex_);
    sends_.erase(sent->sendId);
    delete sent;
    return fail("a send to rank " + std::to_string(to) +
                " failed: its connection is closed (" + std::strerror(errno) +
                ")");
  }
  *request = sent;
  return 0;
}

int Job::test(overlap_mpi_request *request, int *done) {
  if (!request || !done)
    return fail("test: null pointer");
  *done = 0;
  overlap_mpi_request r = *request;
  if (!r) {
    *done = 1;
    return 0;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (r->barrier) {
    overlap_mpi_comm comm = r->comm;
    const uint64_t internal = comm->id | kInternal;
    bool all = true;
    for (size_t m = 0; m < comm->world.size(); ++m) {
      if (r->arrived[m])
        continue;
      auto it = find(internal, comm->world[m], kBarrierTag);
      if (it != queue_.end()) {
        queue_.erase(it);
        r->arrived[m] = 1;
        continue;
      }
      if (std::string why = deadReason(comm->world[m]); !why.empty())
        return fail("a barrier waits for rank " +
                    std::to_string(comm->world[m]) + ": " + why);
      all = false;
    }
    r->done = all;
  } else if (!r->done) {
    if (std::string why = deadReason(r->dest); !why.empty())
      return fail("rank " + std::to_string(r->dest) +
                  " never took a message sent to it: " + why);
  }
  if (r->done) {
    delete r;
    *request = nullptr;
    *done = 1;
  }
  return 0;
}

int Job::ibarrier(overlap_mpi_comm comm, overlap_mpi_request *request) {
  if (!comm || !request)
    return fail("ibarrier: null pointer");
  auto *barrier = new overlap_mpi_request_s;
  barrier->barrier = true;
  barrier->comm = comm;
  barrier->arrived.assign(comm->world.size(), 0);
  barrier->arrived[static_cast<size_t>(comm->rank)] = 1;
  Frame frame;
  frame.kind = Data;
  frame.tag = kBarrierTag;
  frame.comm = comm->id | kInternal;
  for (int member : comm->world)
    if (member != rank && !sendFrame(member, frame, nullptr)) {
      delete barrier;
      return fail("a barrier cannot reach rank " + std::to_string(member) +
                  ": its connection is closed");
    }
  *request = barrier;
  return 0;
}

int Job::improbe(overlap_mpi_comm comm, int source, int tag, int *found,
                 overlap_mpi_message *message, int *sourceOut, int *tagOut,
                 int *bytes) {
  if (!comm || !found || !message)
    return fail("improbe: null pointer");
  *found = 0;
  if (source >= static_cast<int>(comm->world.size()))
    return fail("improbe: rank " + std::to_string(source) + " of " +
                std::to_string(comm->world.size()));
  int from = source < 0 ? -1 : comm->world[static_cast<size_t>(source)];
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = find(comm->id, from, tag);
  if (it == queue_.end()) {
    for (int member : comm->world)
      if (from < 0 || member == from)
        if (std::string why = deadReason(member); !why.empty())
          return fail("waiting for a message from rank " +
                      std::to_string(member) + ": " + why);
    return 0;
  }
  if (it->data.size() > size_t(INT_MAX))
    return fail("a message of " + std::to_string(it->data.size()) +
                " bytes (at most INT_MAX)");
  auto *matched = new overlap_mpi_message_s(std::move(*it));
  queue_.erase(it);
  *found = 1;
  *message = matched;
  if (sourceOut)
    *sourceOut = comm->rankOf(matched->source);
  if (tagOut)
    *tagOut = matched->tag;
  if (bytes)
    *bytes = static_cast<int>(matched->data.size());
  return 0;
}

int Job::mrecv(overlap_mpi_message message, void *data, int bytes) {
  if (!message)
    return fail("mrecv: null message");
  std::unique_ptr<overlap_mpi_message_s> owned(message);
  if (bytes < 0 || static_cast<size_t>(bytes) < owned->data.size())
    return fail("mrecv: a message of " + std::to_string(owned->data.size()) +
                " bytes into " + std::to_string(bytes));
  if (!owned->data.empty())
    std::memcpy(data, owned->data.data(), owned->data.size());
  if (!owned->sendId)
    return 0;
  if (owned->source == rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sends_.find(owned->sendId);
    if (it != sends_.end()) {
      it->second->done = true;
      sends_.erase(it);
    }
    return 0;
  }
  Frame ack;
  ack.kind = Ack;
  ack.sendId = owned->sendId;
  sendFrame(owned->source, ack, nullptr); // a dead sender needs none
  return 0;
}

int Job::exchange(overlap_mpi_comm comm, int tag, const std::string &mine,
                  std::vector<std::string> &all) {
  all.assign(comm->world.size(), std::string());
  all[static_cast<size_t>(comm->rank)] = mine;
  Frame frame;
  frame.kind = Data;
  frame.tag = tag;
  frame.comm = comm->id | kInternal;
  frame.bytes = mine.size();
  for (int member : comm->world)
    if (member != rank && !sendFrame(member, frame, mine.data()))
      return fail("cannot reach rank " + std::to_string(member) +
                  ": its connection is closed");
  std::unique_lock<std::mutex> lock(mutex_);
  for (size_t m = 0; m < comm->world.size(); ++m) {
    int member = comm->world[m];
    if (member == rank)
      continue;
    for (;;) {
      auto it = find(frame.comm, member, tag);
      if (it != queue_.end()) {
        all[m] = std::move(it->data);
        queue_.erase(it);
        break;
      }
      if (std::string why = deadReason(member); !why.empty())
        return fail("waiting for rank " + std::to_string(member) + ": " + why);
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

namespace {

std::mutex jobMutex;
std::string initError;

int tcpInit(int *rank, int *size, int *threadMultiple, int *tagUpperBound,
            int *initialized) {
  std::lock_guard<std::mutex> lock(jobMutex);
  if (!job) {
    auto fresh = std::make_unique<Job>();
    std::string why;
    if (fresh->init(why)) {
      initError = why;
      return -1;
    }
    job = fresh.release();
    *initialized = 1;
  } else {
    *initialized = 0;
  }
  *rank = job->rank;
  *size = job->size;
  *threadMultiple = 1;
  *tagUpperBound = INT_MAX;
  return 0;
}

int tcpFinalize() {
  std::lock_guard<std::mutex> lock(jobMutex);
  if (job)
    job->finalize(); // the Job stays: handles may outlive it
  return 0;
}

void tcpAbort(int code) {
  if (job)
    job->abort(code);
  std::_Exit(code);
}

void tcpErrorString(int code, char *text, size_t size) {
  std::string message = code == -1 ? initError
                        : job      ? job->errorText(code)
                                   : "error " + std::to_string(code);
  std::snprintf(text, size, "%s", message.c_str());
}

void tcpLibraryVersion(char *text, size_t size) {
  std::snprintf(text, size, "Overlap's TCP process transport v%u%s%s", kVersion,
                job ? ", rank 0 at " : "", job ? job->root.c_str() : "");
}

int tcpDupWorld(overlap_mpi_comm *comm) {
  overlap_mpi_comm world = job->world();
  auto *dup = new overlap_mpi_comm_s;
  dup->id = mix(world->id, world->derived.fetch_add(1) + 1);
  dup->world = world->world;
  dup->rank = world->rank;
  *comm = dup;
  return 0;
}

int tcpSplit(overlap_mpi_comm parent, int color, int key,
             overlap_mpi_comm *comm) {
  if (!parent || !comm)
    return job->fail("split: null pointer");
  const uint64_t sequence = parent->derived.fetch_add(1) + 1;
  int32_t pair[2] = {color, key};
  std::vector<std::string> all;
  if (int rc = job->exchange(
          parent, kSplitTag,
          std::string(reinterpret_cast<const char *>(pair), sizeof pair), all))
    return rc;
  *comm = nullptr;
  if (color < 0)
    return 0;
  std::vector<std::pair<std::pair<int32_t, int>, int>> members;
  for (size_t m = 0; m < all.size(); ++m) {
    int32_t theirs[2] = {-1, 0};
    if (all[m].size() == sizeof theirs)
      std::memcpy(theirs, all[m].data(), sizeof theirs);
    if (theirs[0] == color)
      members.push_back({{theirs[1], static_cast<int>(m)}, parent->world[m]});
  }
  std::sort(members.begin(), members.end());
  auto *split = new overlap_mpi_comm_s;
  split->id = mix(mix(parent->id, sequence), static_cast<uint64_t>(color));
  for (auto &member : members) {
    if (member.second == job->rank)
      split->rank = static_cast<int>(split->world.size());
    split->world.push_back(member.second);
  }
  *comm = split;
  return 0;
}

int tcpCommRank(overlap_mpi_comm comm, int *rank) {
  if (!comm || !rank)
    return job->fail("comm_rank: null pointer");
  *rank = comm->rank;
  return 0;
}

int tcpCommFree(overlap_mpi_comm comm) {
  if (comm && comm != job->world())
    delete comm;
  return 0;
}

int tcpIssend(overlap_mpi_comm comm, int dest, int tag, const void *data,
              int bytes, overlap_mpi_request *request) {
  return job->issend(comm, dest, tag, data, bytes, request);
}
int tcpTest(overlap_mpi_request *request, int *done) {
  return job->test(request, done);
}
int tcpIbarrier(overlap_mpi_comm comm, overlap_mpi_request *request) {
  return job->ibarrier(comm, request);
}
int tcpImprobe(overlap_mpi_comm comm, int source, int tag, int *found,
               overlap_mpi_message *message, int *sourceOut, int *tagOut,
               int *bytes) {
  return job->improbe(comm, source, tag, found, message, sourceOut, tagOut,
                      bytes);
}
int tcpMrecv(overlap_mpi_message message, void *data, int bytes) {
  return job->mrecv(message, data, bytes);
}

int tcpAllreduceMax(overlap_mpi_comm comm, int64_t *value) {
  if (!comm || !value)
    return job->fail("allreduce: null pointer");
  std::vector<std::string> all;
  if (int rc = job->exchange(
          comm, kMaxTag,
          std::string(reinterpret_cast<const char *>(value), sizeof *value),
          all))
    return rc;
  for (const std::string &part : all) {
    int64_t theirs = *value;
    if (part.size() == sizeof theirs)
      std::memcpy(&theirs, part.data(), sizeof theirs);
    *value = std::max(*value, theirs);
  }
  return 0;
}

const overlap_mpi_transport kTcpTransport = {
    OVERLAP_MPI_TRANSPORT_VERSION,
    tcpInit,
    tcpFinalize,
    tcpAbort,
    tcpErrorString,
    tcpLibraryVersion,
    tcpDupWorld,
    tcpSplit,
    tcpCommRank,
    tcpCommFree,
    tcpIssend,
    tcpTest,
    tcpIbarrier,
    tcpImprobe,
    tcpMrecv,
    tcpAllreduceMax,
};

} // namespace

const overlap_mpi_transport *overlap::process::tcpTransport() {
  return &kTcpTransport;
}
