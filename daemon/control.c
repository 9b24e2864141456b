/* control.c - see control.h. */
#include "control.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "mpi_tags.h"
#include "mpi_util.h"
#include "progress.h"
#include "rank.h"
#include "record.h"
#include "signals.h"

enum { STATUS_FIELDS = 11 };

/* What a rank tells rank 0 about itself for the status report. */
typedef struct qgmd_rank_status {
  double step;
  double compute_s; /* gradients, on the worker */
  double comm_s;    /* exchanges in flight */
  double steps_s;   /* wall time inside steps (evaluations excluded) */
  double wait_s;    /* steps blocked on an exchange after computing */
  double bytes_sent;
  double collectives; /* collectives joined so far (qgmd_control_joining) */
  double bytes_per_step;         /* since this process started */
  double between_hosts_per_step; /* of them, to ranks on other hosts */
  double updated_s;   /* rank 0's clock when it last heard */
} qgmd_rank_status_t;

struct qgmd_control {
  qgmd_rank_t *rank;
  uv_poll_t signals; /* readable when signalfd holds a signal */
  int signal_fd;
  int interrupts;

  /* Every rank: its latest report in flight to rank 0. */
  double outgoing[STATUS_FIELDS];
  MPI_Request send_request;
  qgmd_wait_t send_wait;
  int last_sent;
  int again; /* newer numbers to send once the report in flight has gone */

  /* Rank 0: everyone's latest numbers. */
  qgmd_rank_status_t *ranks;
  double incoming[STATUS_FIELDS];
  MPI_Request recv_request;
  qgmd_wait_t recv_wait;
  int lasts_received;
  qgmd_done_fn finish_done;
  void *finish_arg;

  uv_pipe_t server;
  int listening;
  int clients; /* connections open, at most MAX_CLIENTS */
  dev_t socket_dev; /* the socket file this run bound */
  ino_t socket_ino;
  char path[1024];
};

/* Connections the socket serves at once. A request is answered at once,
 * so a few are plenty for people and scripts; without a bound, idle
 * connections could take every file descriptor rank 0 has (about 21,000
 * did), and its next checkpoint would fail. One more is told so and
 * closed. */
enum { MAX_CLIENTS = 16 };

typedef struct client {
  uv_pipe_t pipe;
  qgmd_control_t *control;
  int counted; /* one of the c->clients */
  char request[128];
  size_t len;
  uv_write_t write;
  char *reply;
} client_t;

/* ------------------------------------------------------------- status */

/* Message layout: rank, the fields of qgmd_rank_status_t in order (but
 * rank 0's clock), and whether it is the rank's last report. */
static void pack_status(const qgmd_rank_t *rank, int last, double *out) {
  const qgmd_traffic_t sent = qgmd_rank_traffic(rank);
  out[0] = rank->id;
  out[1] = (double)rank->step;
  out[2] = rank->compute_s;
  out[3] = rank->comm_s;
  out[4] = rank->steps_s;
  out[5] = rank->wait_s;
  out[6] = sent.bytes_sent;
  out[7] = (double)rank->collectives;
  const double steps = rank->step > rank->first_step
                           ? (double)(rank->step - rank->first_step)
                           : 1.0;
  out[8] = sent.bytes_sent / steps;
  out[9] = sent.between_hosts / steps;
  out[10] = last;
}

/* Returns whether the report was a rank's last. */
static int store_status(qgmd_control_t *c, const double *in) {
  int rank = (int)in[0];
  if (rank < 0 || rank >= c->rank->nodes)
    return 0;
  c->ranks[rank] = (qgmd_rank_status_t){.step = in[1],
                                        .compute_s = in[2],
                                        .comm_s = in[3],
                                        .steps_s = in[4],
                                        .wait_s = in[5],
                                        .bytes_sent = in[6],
                                        .collectives = in[7],
                                        .bytes_per_step = in[8],
                                        .between_hosts_per_step = in[9],
                                        .updated_s = qgmd_now()};
  return in[10] != 0.0;
}

static void maybe_finished(qgmd_control_t *c) {
  if (!c->finish_done || c->last_sent < (c->rank->id != 0) ||
      qgmd_loop_waiting(&c->rank->loop, &c->send_wait) ||
      (c->rank->id == 0 && c->lasts_received < c->rank->nodes - 1))
    return;
  qgmd_done_fn done = c->finish_done;
  c->finish_done = NULL;
  done(c->finish_arg);
}

static void status_received(void *arg);

static void post_receive(qgmd_control_t *c) {
  MPI_Irecv(c->incoming, STATUS_FIELDS, MPI_DOUBLE, MPI_ANY_SOURCE,
            QGMD_STATUS_TAG, MPI_COMM_WORLD, &c->recv_request);
  qgmd_loop_wait(&c->rank->loop, &c->recv_wait, &c->recv_request, 1,
                 status_received, c);
}

static void status_received(void *arg) {
  qgmd_control_t *c = arg;
  c->lasts_received += store_status(c, c->incoming);
  /* Non-overtaking order: a rank's last report is also its last message,
   * so once every rank's last is in, nothing more can arrive. */
  if (c->lasts_received < c->rank->nodes - 1)
    post_receive(c);
  maybe_finished(c);
}

static void send_report(qgmd_control_t *c, int last);

static void report_sent(void *arg) {
  qgmd_control_t *c = arg;
  if (c->finish_done && !c->last_sent)
    send_report(c, 1); /* the latest numbers, and the last message */
  else if (c->again && !c->finish_done)
    send_report(c, 0);
  c->again = 0;
  maybe_finished(c);
}

static void send_report(qgmd_control_t *c, int last) {
  pack_status(c->rank, last, c->outgoing);
  c->last_sent = last;
  MPI_Isend(c->outgoing, STATUS_FIELDS, MPI_DOUBLE, 0, QGMD_STATUS_TAG,
            MPI_COMM_WORLD, &c->send_request);
  qgmd_loop_wait(&c->rank->loop, &c->send_wait, &c->send_request, 1,
                 report_sent, c);
}

void qgmd_control_report(qgmd_control_t *c, const qgmd_rank_t *rank) {
  if (rank->id == 0) {
    double mine[STATUS_FIELDS];
    pack_status(rank, 0, mine);
    store_status(c, mine);
  } else if (qgmd_loop_waiting(&rank->loop, &c->send_wait)) {
    c->again = 1;
  } else {
    send_report(c, 0);
  }
}

void qgmd_control_joining(qgmd_rank_t *rank) {
  rank->collectives++;
  qgmd_control_report(rank->control, rank);
}

int qgmd_control_behind(const qgmd_control_t *c, uint64_t collectives,
                        char *out, size_t size) {
  int count = 0;
  size_t used = 0;
  out[0] = '\0';
  for (int r = 0; c->rank->id == 0 && r < c->rank->nodes; r++) {
    if (c->ranks[r].collectives >= (double)collectives)
      continue;
    int n = snprintf(out + used, size - used, "%s%d", count ? ", " : "", r);
    if (n < 0 || (size_t)n >= size - used)
      break;
    used += (size_t)n;
    count++;
  }
  return count;
}

void qgmd_control_finish(qgmd_control_t *c, qgmd_done_fn done, void *arg) {
  c->finish_done = done;
  c->finish_arg = arg;
  if (c->rank->id == 0)
    qgmd_control_report(c, c->rank);
  else if (!qgmd_loop_waiting(&c->rank->loop, &c->send_wait))
    send_report(c, 1); /* otherwise report_sent sends it */
  maybe_finished(c);
}

/* ------------------------------------------------------------ signals */

static void on_stop_signal(qgmd_control_t *c, int signum) {
  const char *name = signum == SIGINT ? "SIGINT" : "SIGTERM";
  if (++c->interrupts >= 2) {
    LOG(LOG_ERROR, "%s again: aborting at once", name);
    MPI_Abort(MPI_COMM_WORLD, 128 + signum);
  }
  if (qgmd_stop_ask(&c->rank->stop))
    LOG(LOG_WARN, "%s: stopping at the next agreed step (send it again to "
        "abort)", name);
}

static void on_status_signal(const qgmd_rank_t *rank) {
  fprintf(stderr, "qgmd[%d]: step %llu/%llu  epoch %.2f  lr %.4g  "
          "compute %.1fs  exchange %.1fs  waiting %.1fs  sent %.1f MB\n",
          rank->id, (unsigned long long)rank->step,
          (unsigned long long)rank->total_steps,
          (double)rank->step / (double)rank->steps_per_epoch, rank->lr,
          rank->compute_s, rank->comm_s, rank->wait_s,
          qgmd_rank_traffic(rank).bytes_sent / 1e6);
}

static void signals_ready(uv_poll_t *handle, int status, int events) {
  (void)status;
  (void)events;
  qgmd_control_t *c = handle->data;
  for (int signum; (signum = qgmd_signals_next(c->signal_fd)) != 0;) {
    if (signum == SIGUSR1)
      on_status_signal(c->rank);
    else
      on_stop_signal(c, signum);
  }
}

/* The signals blocked since main's first line (signals.h), those that
 * came during start-up included. */
static int watch_signals(qgmd_control_t *c, char *err, size_t errlen) {
  c->signal_fd = qgmd_signals_fd();
  if (c->signal_fd < 0 ||
      uv_poll_init(&c->rank->loop.uv, &c->signals, c->signal_fd) != 0) {
    snprintf(err, errlen, "cannot watch for signals: %s", strerror(errno));
    return 1;
  }
  c->signals.data = c;
  uv_poll_start(&c->signals, UV_READABLE, signals_ready);
  return 0;
}

/* ----------------------------------------------------- status report */

/* (compute + comm - elapsed) / min(compute, comm): 1 when the shorter of
 * the two hides entirely behind the longer, 0 when they take turns (the
 * bookkeeping between them would make it negative: it is cut at 0). */
static double overlap_ratio(const qgmd_rank_status_t *r) {
  double shorter = r->compute_s < r->comm_s ? r->compute_s : r->comm_s;
  double hidden = r->compute_s + r->comm_s - r->steps_s;
  return shorter > 0.0 && hidden > 0.0 ? hidden / shorter : 0.0;
}

/* The ranks' latest figures as a JSON array (free it), or NULL when out
 * of memory. */
static char *ranks_json(const qgmd_control_t *c) {
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  if (!f)
    return NULL;
  const int degree = qgmd_rank_traffic(c->rank).peers;
  const double now = qgmd_now();
  int failed = fputc('[', f) == EOF;
  for (int r = 0; r < c->rank->nodes && !failed; r++) {
    const qgmd_rank_status_t *s = &c->ranks[r];
    const qgmd_field_t fields[] = {
        QGMD_INT("rank", r),
        QGMD_DOUBLE("step", "%.0f", s->step),
        QGMD_DOUBLE("compute_s", "%.3f", s->compute_s),
        QGMD_DOUBLE("comm_s", "%.3f", s->comm_s),
        QGMD_DOUBLE("wait_s", "%.3f", s->wait_s),
        QGMD_DOUBLE("overlap_ratio", "%.3f", overlap_ratio(s)),
        QGMD_DOUBLE("bytes_sent", "%.0f", s->bytes_sent),
        QGMD_DOUBLE("bytes_sent_per_neighbour", "%.0f",
                    s->bytes_sent / degree),
        QGMD_DOUBLE("bytes_per_step", "%.0f", s->bytes_per_step),
        QGMD_DOUBLE("bytes_between_hosts_per_step", "%.0f",
                    s->between_hosts_per_step),
        QGMD_DOUBLE("last_report_age_s", "%.3f",
                    s->updated_s > 0 ? now - s->updated_s : -1.0),
    };
    char *item = qgmd_record_json(NULL, QGMD_FIELDS(fields));
    failed = !item || fprintf(f, "%s%s", r ? "," : "", item) < 0;
    free(item);
  }
  failed |= fputc(']', f) == EOF;
  failed |= fclose(f) != 0;
  if (!failed)
    return json;
  free(json);
  return NULL;
}

/* The latest evaluation's figures as a JSON object (free it), or NULL. */
static char *last_eval_json(const qgmd_evaluation_t *e) {
  const qgmd_field_t fields[] = {
      QGMD_DOUBLE("epoch", "%.6g", e->epoch),
      QGMD_UINT("step", e->step),
      QGMD_DOUBLE("train_loss", "%.6f", e->train_loss),
      QGMD_DOUBLE("test_acc_avg_model", "%.6f", e->acc_avg_model),
      QGMD_DOUBLE("test_acc_local_mean", "%.6f", e->acc_local_mean),
      QGMD_DOUBLE("consensus_dist", "%.6g", e->consensus),
  };
  return qgmd_record_json(NULL, QGMD_FIELDS(fields));
}

/* The status report, one line (free it), or NULL when out of memory. What
 * is not known yet is null, never a made-up 0; names from the command
 * line (a file: topology is a path) are escaped. */
static char *status_json(const qgmd_control_t *c) {
  const qgmd_rank_t *rank = c->rank;
  const double eta = qgmd_progress_eta(rank);
  char *last_eval = last_eval_json(&rank->last);
  char *ranks = ranks_json(c);
  char *line = NULL;
  if (last_eval && ranks) {
    const qgmd_field_t fields[] = {
        QGMD_UINT("step", rank->step),
        QGMD_UINT("total_steps", rank->total_steps),
        QGMD_DOUBLE("epoch", "%.4f",
                    (double)rank->step / (double)rank->steps_per_epoch),
        QGMD_DOUBLE("lr", "%.6g", rank->lr),
        QGMD_STRING("algorithm", rank->cfg->algorithm),
        QGMD_STRING("topology", rank->cfg->topology),
        QGMD_INT("nodes", rank->nodes),
        /* A run that lost nodes (--resume-ranks): how many it began with,
         * whose shards the data stays partitioned into. */
        QGMD_IF(rank->parts != rank->nodes,
                QGMD_INT("first_nodes", rank->parts)),
        QGMD_IF(rank->parts != rank->nodes,
                QGMD_INT("shards_dropped", rank->parts - rank->nodes)),
        QGMD_BOOL("stopping", rank->stop.asked),
        QGMD_DOUBLE("elapsed_s", "%.3f",
                    rank->start_s > 0.0 ? qgmd_progress_elapsed(rank) : 0.0),
        QGMD_OR_NULL(eta >= 0.0, QGMD_DOUBLE("eta_s", "%.1f", eta)),
        QGMD_OR_NULL(rank->last.step > 0, QGMD_JSON("last_eval", last_eval)),
        QGMD_JSON("ranks", ranks),
    };
    const size_t len = qgmd_record_format(NULL, 0, NULL, QGMD_FIELDS(fields));
    if ((line = malloc(len + 2))) {
      qgmd_record_format(line, len + 1, NULL, QGMD_FIELDS(fields));
      memcpy(line + len, "\n", 2);
    }
  }
  free(last_eval);
  free(ranks);
  return line;
}

/* The same report for a person (qgmctl status --human): a line for the
 * job, one for the last evaluation, and a table of the ranks. What is not
 * known yet says so. Free it; NULL when out of memory. */
static char *status_text(const qgmd_control_t *c) {
  const qgmd_rank_t *rank = c->rank;
  const qgmd_evaluation_t *e = &rank->last;
  const double eta = qgmd_progress_eta(rank), now = qgmd_now();
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  fprintf(f, "%s on %d node%s (%s)%s: step %" PRIu64 " of %" PRIu64
          " (epoch %.2f), lr %.4g, %.1f s elapsed, ETA ",
          rank->cfg->algorithm, rank->nodes, rank->nodes == 1 ? "" : "s",
          rank->cfg->topology, rank->stop.asked ? ", stopping" : "",
          rank->step, rank->total_steps,
          (double)rank->step / (double)rank->steps_per_epoch, rank->lr,
          rank->start_s > 0.0 ? qgmd_progress_elapsed(rank) : 0.0);
  if (eta >= 0.0)
    fprintf(f, "%.0f s\n", eta);
  else
    fprintf(f, "not known yet\n");
  if (e->step > 0)
    fprintf(f, "last evaluation (epoch %.4g, step %" PRIu64 "): test "
            "accuracy %.4f averaged model, %.4f local mean; train loss "
            "%.4f; consensus distance %.3g\n", e->epoch, e->step,
            e->acc_avg_model, e->acc_local_mean, e->train_loss, e->consensus);
  else
    fprintf(f, "last evaluation: none yet\n");
  fprintf(f, "%5s %10s %10s %10s %10s %8s %12s %10s\n", "rank", "step",
          "compute s", "comm s", "wait s", "overlap", "MB sent", "report");
  for (int r = 0; r < rank->nodes; r++) {
    const qgmd_rank_status_t *st = &c->ranks[r];
    fprintf(f, "%5d %10.0f %10.2f %10.2f %10.2f %8.2f %12.2f ", r, st->step,
            st->compute_s, st->comm_s, st->wait_s, overlap_ratio(st),
            st->bytes_sent / 1e6);
    if (st->updated_s > 0)
      fprintf(f, "%8.1f s\n", now - st->updated_s);
    else
      fprintf(f, "%10s\n", "none yet");
  }
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

/* ------------------------------------------------------ control socket */

static void client_closed(uv_handle_t *handle) {
  client_t *cl = handle->data;
  if (cl->counted)
    cl->control->clients--;
  free(cl->reply);
  free(cl);
}

static void reply_written(uv_write_t *req, int status) {
  (void)status;
  client_t *cl = req->data;
  uv_close((uv_handle_t *)&cl->pipe, client_closed);
}

/* Writes cl->reply, then closes the connection (at once without one). */
static void send_reply(client_t *cl) {
  if (!cl->reply) {
    uv_close((uv_handle_t *)&cl->pipe, client_closed);
    return;
  }
  uv_buf_t buf = uv_buf_init(cl->reply, (unsigned)strlen(cl->reply));
  cl->write.data = cl;
  if (uv_write(&cl->write, (uv_stream_t *)&cl->pipe, &buf, 1,
               reply_written) != 0)
    uv_close((uv_handle_t *)&cl->pipe, client_closed);
}

static void answer(client_t *cl) {
  qgmd_control_t *c = cl->control;
  cl->request[cl->len < sizeof cl->request ? cl->len : sizeof cl->request - 1] =
      '\0';
  cl->request[strcspn(cl->request, "\r\n")] = '\0';
  if (strcmp(cl->request, "status") == 0 ||
      strcmp(cl->request, "status human") == 0) {
    qgmd_control_report(c, c->rank); /* rank 0's own numbers, fresh */
    cl->reply = cl->request[6] ? status_text(c) : status_json(c);
  } else if (strcmp(cl->request, "stop") == 0) {
    if (qgmd_stop_ask(&c->rank->stop))
      LOG(LOG_WARN, "qgmctl: stopping at the next agreed step");
    cl->reply = strdup("{\"stopping\":true}\n");
  } else {
    cl->reply = strdup("{\"error\":\"unknown command (status, status "
                       "human, stop)\"}\n");
  }
  uv_read_stop((uv_stream_t *)&cl->pipe);
  send_reply(cl);
}

static void alloc_request(uv_handle_t *handle, size_t suggested,
                          uv_buf_t *buf) {
  (void)suggested;
  client_t *cl = handle->data;
  *buf = uv_buf_init(cl->request + cl->len,
                     (unsigned)(sizeof cl->request - 1 - cl->len));
}

static void request_read(uv_stream_t *stream, ssize_t nread,
                         const uv_buf_t *buf) {
  (void)buf;
  client_t *cl = stream->data;
  if (nread > 0)
    cl->len += (size_t)nread;
  if (nread < 0 || memchr(cl->request, '\n', cl->len) ||
      cl->len + 1 >= sizeof cl->request) {
    if (cl->len > 0)
      answer(cl);
    else
      uv_close((uv_handle_t *)&cl->pipe, client_closed);
  }
}

static void on_connection(uv_stream_t *server, int status) {
  qgmd_control_t *c = server->data;
  if (status < 0)
    return;
  client_t *cl = calloc(1, sizeof *cl);
  if (!cl)
    return;
  cl->control = c;
  uv_pipe_init(&c->rank->loop.uv, &cl->pipe, 0);
  cl->pipe.data = cl;
  if (uv_accept(server, (uv_stream_t *)&cl->pipe) != 0) {
    uv_close((uv_handle_t *)&cl->pipe, client_closed);
    return;
  }
  /* Accepted even when too many are open: a connection left waiting
   * would stop libuv from accepting any other. */
  if (c->clients >= MAX_CLIENTS) {
    char busy[128];
    snprintf(busy, sizeof busy, "{\"error\":\"busy: %d connections are "
             "open, the most served at once\"}\n", MAX_CLIENTS);
    cl->reply = strdup(busy);
    send_reply(cl);
    return;
  }
  cl->counted = 1;
  c->clients++;
  if (uv_read_start((uv_stream_t *)&cl->pipe, alloc_request,
                    request_read) != 0)
    uv_close((uv_handle_t *)&cl->pipe, client_closed);
}

int qgmd_default_control_path(char *out, size_t size, char *err,
                              size_t errlen) {
  const char *runtime = getenv("XDG_RUNTIME_DIR");
  if (runtime && *runtime) {
    snprintf(out, size, "%s/qgmd.sock", runtime);
    return 0;
  }
  char dir[256];
  snprintf(dir, sizeof dir, "/tmp/qgmd-%u", (unsigned)getuid());
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    return -1;
  }
  /* Another user could have made it first: only a private directory of
   * ours keeps other users away from the socket. */
  struct stat st;
  if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    snprintf(err, errlen, "%s is not a private directory of this user", dir);
    return -1;
  }
  snprintf(out, size, "%s/qgmd.sock", dir);
  return 0;
}

static int socket_is_live(const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path)
    return 0;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0)
    return 0;
  int live = connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  close(fd);
  return live;
}

/* A path that a socket can be bound to, checked first: the kernel's
 * address holds only 107 bytes (a longer path would be cut, binding
 * elsewhere), and a missing directory is not a permission problem. */
static int check_socket_path(const char *path, char *err, size_t errlen) {
  struct sockaddr_un addr;
  size_t len = strlen(path);
  if (len >= sizeof addr.sun_path) {
    snprintf(err, errlen, "--control=%s: too long for a Unix socket (%zu "
             "bytes, at most %zu)", path, len, sizeof addr.sun_path - 1);
    return -1;
  }
  char dir[sizeof addr.sun_path] = ".";
  const char *slash = strrchr(path, '/');
  if (slash) /* "/x.sock" lives in "/" */
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path),
             path);
  struct stat st;
  if (stat(dir, &st) != 0)
    snprintf(err, errlen, "--control=%s: the directory %s: %s", path, dir,
             strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    snprintf(err, errlen, "--control=%s: %s is not a directory", path, dir);
  else
    return 0;
  return -1;
}

/* Binds rank 0's socket, mode 0600. A live socket of another run at the
 * same path is left alone: this run then goes without one. */
static int listen_control(qgmd_control_t *c, char *err, size_t errlen) {
  const qgmd_config_t *cfg = c->rank->cfg;
  if (strcmp(cfg->control, "none") == 0)
    return 0;
  if (cfg->control[0])
    snprintf(c->path, sizeof c->path, "%s", cfg->control);
  else if (qgmd_default_control_path(c->path, sizeof c->path, err,
                                     errlen) != 0)
    return 2;
  if (check_socket_path(c->path, err, errlen) != 0)
    return 2;
  uv_loop_t *uv = &c->rank->loop.uv;
  uv_pipe_init(uv, &c->server, 0);
  c->server.data = c;
  struct stat st;
  if (lstat(c->path, &st) == 0 && S_ISSOCK(st.st_mode)) {
    if (socket_is_live(c->path)) {
      LOG(LOG_WARN, "%s: another qgmd is listening there; this run has no "
          "control socket (give it one with --control=PATH)", c->path);
      return 0;
    }
    unlink(c->path); /* left behind by a run that was killed */
  }
  /* Bound here, not by uv_pipe_bind: libuv removes the path of a pipe it
   * bound when the handle closes, even once the path holds another run's
   * socket; qgmd_control_free removes it only while it is this run's. */
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  memcpy(addr.sun_path, c->path, strlen(c->path) + 1); /* length checked */
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  mode_t old = umask(0177);
  int rc = fd < 0 ? uv_translate_sys_error(errno)
                  : bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0
                        ? 0
                        : uv_translate_sys_error(errno);
  umask(old);
  if (rc == UV_EADDRINUSE) { /* another run bound it since the check */
    close(fd);
    LOG(LOG_WARN, "%s: another qgmd took it as this one started; this run "
        "has no control socket (give it one with --control=PATH)", c->path);
    return 0;
  }
  if (rc == 0 && lstat(c->path, &st) == 0) {
    c->socket_dev = st.st_dev;
    c->socket_ino = st.st_ino;
    c->listening = 1; /* the path is ours to remove from now on */
  }
  if (rc == 0)
    rc = uv_pipe_open(&c->server, fd);
  else if (fd >= 0)
    close(fd);
  if (rc == 0)
    rc = chmod(c->path, 0600) == 0 ? 0 : UV_EPERM;
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&c->server, 8, on_connection);
  if (rc != 0) {
    snprintf(err, errlen, "--control=%s: %s", c->path, uv_strerror(rc));
    return 2;
  }
  LOG(LOG_DEBUG, "control socket %s", c->path);
  return 0;
}

int qgmd_control_start(qgmd_rank_t *rank, char *err, size_t errlen) {
  qgmd_control_t *c = calloc(1, sizeof *c);
  if (!c || !(c->ranks = calloc((size_t)rank->nodes, sizeof *c->ranks))) {
    free(c);
    snprintf(err, errlen, "out of memory");
    return 1;
  }
  c->rank = rank;
  rank->control = c;
  c->signal_fd = -1;
  if (watch_signals(c, err, errlen) != 0)
    return 1;
  if (rank->id != 0)
    return 0;
  if (rank->nodes > 1)
    post_receive(c);
  return listen_control(c, err, errlen);
}

void qgmd_control_free(qgmd_control_t *c) {
  if (!c)
    return;
  struct stat st;
  if (c->listening && lstat(c->path, &st) == 0 && st.st_dev == c->socket_dev &&
      st.st_ino == c->socket_ino)
    unlink(c->path);
  if (c->signal_fd >= 0)
    close(c->signal_fd);
  free(c->ranks);
  free(c);
}
