"""Remote inference as a scenario (issue 22 item 3; seed 002, Ogden & Guo, section 4: cloud-based
inference, table 4, figure 10): a model served by a lab machine over HTTP and measured from a
client, its time split into upload, server compute and download, under network conditions the
lab applies to its own transfers on loopback.

Django-free. The modules, by what they hold:

* ``shaping``: ``LinkShape`` (rates and one-way delay) and the paced send that applies it;
* ``endpoint``: the HTTP inference server (``POST /infer``, ``GET /health``) in a process of its
  own, one model loaded once through the CPU backend's onnxruntime session;
* ``client``: one request timed (``request_once``), a link measured (``measure_remote``), a model
  served and measured over several links (``run_remote_scenario``), payloads, network profiles;
* ``spec``: a remote run as a job states it (``RemoteSpec``: profiles, requests, payload, seed);
* ``on_device``: what a worker runs for a job of kind ``remote_scenario`` (``remote_on_device``),
  and each profile's summary (``summarize_profile``).

onnxruntime is imported only when a model is loaded (``endpoint.LoadedModel``, in the serving
process). ``docs/remote.md`` has what is measured, how shaping works, its limits and numbers.

Each is imported from its module; this package imports none of them, so that ``spec`` (what a
run takes, declared once) imports no numpy: the command line builds its flags from it.
"""
