"""Repo sources: where an instance's repository history comes from, made local.

GitHub is not reachable from every machine and users have mirrors, so a dataset names
where its histories are (``repos:`` per repo, ``instance_repos:`` per instance id), each
entry one source or a list of them (:mod:`.config`); one module per kind:

* ``local`` (:mod:`.local`): a git repository on this machine (the repository itself: its
  work tree's top, or a bare / ``.git`` directory), used in place;
* ``archive`` (:mod:`.archive`): a tar (plain, gz, bz2, xz) or zip file pinned by sha256
  over its bytes. If it holds a git repository (a ``.git`` directory, or a bare repo, at
  its top or in a top-level directory), that repository is the source. Otherwise it is a
  plain source tree, an sdist: its files become one commit made the same on every machine
  (:mod:`.sdist`, ``python -m evalrepro.sources.sdist sdist-commit FILE``);
* ``remote`` (:mod:`.remote`): a git URL (https, http, ssh, git, file), fetched into the
  cache at plan time, pinned by the dataset's base commits: its history is the ancestry of
  the base commits it serves, nothing the remote's branches point at today;
* ``demo`` (:mod:`.demo`): one of the built-in demo repos, built here.

Which source serves an instance (:func:`.resolve.resolve_sources`): its ``instance_repos``
entry if it has one, else its repo's ``repos`` entry; of a list, the first source (in the
order listed) whose history has the base commit. A source that cannot be read (a remote
that cannot be reached) before the commit is found makes the instance unavailable (an
infrastructure error), never silently served by a later source: which source serves an
instance depends on what the sources hold, not on what the network did today.

Every source gives a :class:`.checkout.LocalCheckout` whose two exports feed the image
layers deterministically: the history as a bare repo and the tree of one commit. Its
``source_digest`` is a digest of exactly the refs the history export holds, so sources
with the same history share one history layer, whatever their kind or repo name.

git runs (:mod:`.git`) with no system or global config and none of the caller's ``GIT_*``
variables (network fetches excepted: they may use the user's transport settings, since
fetched objects are checked against their ids), and always with its repository named,
never discovered, except for a ``local`` source, whose path is looked up but not above
itself. Commits made from files (an sdist's, the demo repos') are :mod:`.commits`';
unpacking an archive safely is :mod:`.unpack`'s.

This package imports none of its modules: import each name from its module.
"""
