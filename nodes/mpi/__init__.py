"""mpi4py's interface, the part programs use, over a transport (nodes.mpi.transport): so an
mpi4py program runs unchanged as a task of a job on the emulated multicomputer (the live
interconnect: nodes.mpi.live) or on local processes (``python -m nodes.mpi.local -n N``).

Layers: ``MPI`` (the namespace programs see) over ``comm``/``intracomm``/``topo`` (the
communicator classes), ``collectives`` (the algorithms, from point-to-point messages),
``matching`` (envelope, queues, progress), ``buffers`` (the buffer API's specifications),
``request``, ``status``, ``constants``, ``errors``. ``shim/mpi4py`` is a package named
mpi4py whose ``MPI`` is this ``MPI``: the node agent puts ``shim`` first on a job's
PYTHONPATH; outside a job nothing changes.
"""
