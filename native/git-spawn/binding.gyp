{
  "targets": [
    {
      "target_name": "git_spawn",
      "sources": ["spawn.c"],
      "cflags": ["-O2", "-Wall"],
      "conditions": [["OS!='linux'", { "type": "none", "sources": [] }]]
    }
  ]
}
