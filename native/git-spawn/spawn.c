// posix_spawn for Node on Linux: starts a program without fork(), so the cost of starting it
// does not grow with the memory of the calling process (libuv forks, which copies the page
// tables and makes every page the caller writes afterwards fault once). The child's exit is
// watched through a pidfd on the caller's own event loop.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

typedef struct {
  uv_poll_t poll;
  int pidfd;
  pid_t pid;
  napi_env env;
  napi_ref callback;
  napi_async_context context;
} child_t;

static int pidfd_open_(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

static napi_value throw_errno(napi_env env, int err, const char* what) {
  napi_value msg, code, error;
  char text[256];
  const char* name = uv_err_name(-err);  // libuv's codes are negated errno values on Unix
  snprintf(text, sizeof text, "%s: %s", what, strerror(err));
  napi_create_string_utf8(env, text, NAPI_AUTO_LENGTH, &msg);
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &code);
  napi_create_error(env, code, msg, &error);
  napi_value errnoValue;
  napi_create_int32(env, -err, &errnoValue);
  napi_set_named_property(env, error, "errno", errnoValue);
  napi_throw(env, error);
  return NULL;
}

static char* string_of(napi_env env, napi_value value) {
  size_t len = 0;
  if (napi_get_value_string_utf8(env, value, NULL, 0, &len) != napi_ok) return NULL;
  char* out = malloc(len + 1);
  if (!out) return NULL;
  napi_get_value_string_utf8(env, value, out, len + 1, &len);
  return out;
}

static void free_strings(char** list) {
  if (!list) return;
  for (char** p = list; *p; p++) free(*p);
  free(list);
}

static char** strings_of(napi_env env, napi_value array) {
  uint32_t n = 0;
  if (napi_get_array_length(env, array, &n) != napi_ok) return NULL;
  char** out = calloc(n + 1, sizeof(char*));
  if (!out) return NULL;
  for (uint32_t i = 0; i < n; i++) {
    napi_value item;
    napi_get_element(env, array, i, &item);
    out[i] = string_of(env, item);
    if (!out[i]) {
      // Not a string (or no memory): refuse rather than cut the list short.
      free_strings(out);
      return NULL;
    }
  }
  return out;
}

static void on_closed(uv_handle_t* handle) {
  child_t* c = (child_t*)handle;
  close(c->pidfd);
  free(c);
}

static void on_child_exit(uv_poll_t* poll, int status, int events) {
  child_t* c = (child_t*)poll;
  int wstatus = 0;
  pid_t got = waitpid(c->pid, &wstatus, WNOHANG);
  if (got == 0) return;  // not yet reapable: poll again
  uv_poll_stop(poll);
  napi_env env = c->env;
  napi_handle_scope scope;
  napi_open_handle_scope(env, &scope);
  napi_value callback, global, argv[2], result;
  napi_get_reference_value(env, c->callback, &callback);
  napi_get_global(env, &global);
  if (got < 0) {
    napi_create_int32(env, -1, &argv[0]);
    napi_get_null(env, &argv[1]);
  } else if (WIFEXITED(wstatus)) {
    napi_create_int32(env, WEXITSTATUS(wstatus), &argv[0]);
    napi_get_null(env, &argv[1]);
  } else {
    napi_get_null(env, &argv[0]);
    napi_create_int32(env, WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0, &argv[1]);
  }
  napi_make_callback(env, c->context, global, callback, 2, argv, &result);
  napi_delete_reference(env, c->callback);
  napi_async_destroy(env, c->context);
  napi_close_handle_scope(env, scope);
  uv_close((uv_handle_t*)poll, on_closed);
}

// Keeps a pipe end clear of 0-2, so that dup2 onto the child's standard descriptors never
// lands on itself (which would keep FD_CLOEXEC set).
static int above_stdio(int fd) {
  if (fd > 2) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

// spawn(file, argv, envp, cwd, onExit(code, signal)) -> [pid, stdin, stdout, stderr]
static napi_value Spawn(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value args[5];
  napi_get_cb_info(env, info, &argc, args, NULL, NULL);
  if (argc < 5) {
    napi_throw_type_error(env, NULL, "spawn(file, argv, envp, cwd, onExit)");
    return NULL;
  }
  char* file = string_of(env, args[0]);
  char** argv = strings_of(env, args[1]);
  char** envp = strings_of(env, args[2]);
  char* cwd = string_of(env, args[3]);
  int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
  int err = 0;
  const char* what = "spawn";
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  pid_t pid = -1;
  int pidfd = -1;

  if (!file || !argv || !envp || !cwd) {
    err = EINVAL;
    what = "arguments must be strings";
    goto done;
  }
  for (int i = 0; i < 3; i++) {
    if (pipe2(fds[i], O_CLOEXEC) != 0) {
      err = errno;
      what = "pipe";
      goto done;
    }
    fds[i][0] = above_stdio(fds[i][0]);
    fds[i][1] = above_stdio(fds[i][1]);
    if (fds[i][0] < 0 || fds[i][1] < 0) {
      err = errno;
      what = "pipe";
      goto done;
    }
  }
  posix_spawn_file_actions_adddup2(&actions, fds[0][0], 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1][1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[2][1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  sigdelset(&all, SIGKILL);
  sigdelset(&all, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  // A session of its own, as Node's `detached` gives: a process group to kill as one, and no
  // controlling terminal, so nothing git runs (ssh) can stop on a prompt it cannot show.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSID);
  err = posix_spawn(&pid, file, &actions, &attr, argv, envp);
  if (err != 0) goto done;
  pidfd = pidfd_open_(pid);
  if (pidfd < 0) {
    // Cannot watch it: end it rather than leave it unreaped.
    err = errno;
    what = "pidfd_open";
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    goto done;
  }

done:
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  free(file);
  free(cwd);
  free_strings(argv);
  free_strings(envp);
  // The child's ends are the child's now (or nobody's).
  if (fds[0][0] >= 0) close(fds[0][0]);
  if (fds[1][1] >= 0) close(fds[1][1]);
  if (fds[2][1] >= 0) close(fds[2][1]);
  if (err != 0) {
    if (fds[0][1] >= 0) close(fds[0][1]);
    if (fds[1][0] >= 0) close(fds[1][0]);
    if (fds[2][0] >= 0) close(fds[2][0]);
    return throw_errno(env, err, what);
  }

  child_t* c = calloc(1, sizeof(child_t));
  uv_loop_t* loop;
  napi_get_uv_event_loop(env, &loop);
  c->pidfd = pidfd;
  c->pid = pid;
  c->env = env;
  napi_create_reference(env, args[4], 1, &c->callback);
  napi_value resource_name;
  napi_create_string_utf8(env, "GitSpawn", NAPI_AUTO_LENGTH, &resource_name);
  napi_async_init(env, NULL, resource_name, &c->context);
  uv_poll_init(loop, &c->poll, pidfd);
  uv_poll_start(&c->poll, UV_READABLE, on_child_exit);

  napi_value out, item;
  napi_create_array_with_length(env, 4, &out);
  napi_create_int32(env, pid, &item);
  napi_set_element(env, out, 0, item);
  int parent_ends[3] = {fds[0][1], fds[1][0], fds[2][0]};
  for (int i = 0; i < 3; i++) {
    napi_create_int32(env, parent_ends[i], &item);
    napi_set_element(env, out, i + 1, item);
  }
  return out;
}

// available() -> whether pidfd_open works here (Linux 5.3 and later).
static napi_value Available(napi_env env, napi_callback_info info) {
  int fd = pidfd_open_(getpid());
  napi_value result;
  napi_get_boolean(env, fd >= 0, &result);
  if (fd >= 0) close(fd);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "spawn", NAPI_AUTO_LENGTH, Spawn, NULL, &fn);
  napi_set_named_property(env, exports, "spawn", fn);
  napi_create_function(env, "available", NAPI_AUTO_LENGTH, Available, NULL, &fn);
  napi_set_named_property(env, exports, "available", fn);
  return exports;
}
