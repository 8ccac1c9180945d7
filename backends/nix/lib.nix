# evalrepro's images as Nix derivations, from the image records of a lockfile.
#
# No nixpkgs: every input is a fixed-output path pinned by hash (a .deb, a wheel, a tree
# tar, the static busybox), and the layers are written by layers.py, run by the Python of
# the image's own Debian packages through their dynamic loader. Both evalrepro's nix
# builder and flake.nix call this file: one implementation.
#
#   imagesFromRecords records  ->  { <layer key> = <docker-archive of the chain up to it>; }
#   imagesFromLockfile lock    ->  { <instance id> = <docker-archive of its image>; }
#
# A record is an ImageRecord as evalrepro writes it (layer, key, parent_key, tag, inputs);
# its digests are not read here: they are what the build gives.
let
  system = "x86_64-linux";

  # A pinned file. If the store has it (evalrepro added it with `nix-store --add-fixed`)
  # nothing is fetched; else Nix fetches `url`, and refuses bytes of another hash.
  fixed =
    {
      name,
      url,
      digest,
      recursive ? false,
    }:
    derivation {
      inherit name system url;
      builder = "builtin:fetchurl";
      outputHashAlgo = "sha256";
      outputHash = builtins.substring 7 64 digest; # "sha256:<hex>" -> "<hex>"
      outputHashMode = if recursive then "recursive" else "flat";
      unpack = false;
      executable = false;
      preferLocalBuild = true;
      impureEnvVars = [
        "http_proxy"
        "https_proxy"
        "no_proxy"
      ];
    };

  ofKind = kind: inputs: builtins.filter (i: i.kind == kind) inputs;
  setting =
    name: inputs:
    let
      found = builtins.filter (i: i.kind == "setting" && i.name == name) inputs;
    in
    if found == [ ] then throw "evalrepro: no setting ${name} among the inputs" else (builtins.head found).version;

  # Store names allow [A-Za-z0-9+._?=-]: a Debian version's ':' and '~' are escaped as
  # evalrepro.debian.DebPin.store_name does.
  debName =
    i:
    let
      arch = builtins.head (builtins.match ".*_([a-z0-9-]+)\\.deb" i.source);
      version = builtins.replaceStrings [ ":" "~" ] [ "=3a" "=7e" ] i.version;
    in
    "${i.name}_${version}_${arch}.deb";
  # As evalrepro.builders.nix._safe: a repo's or a wheel's name in a store path name.
  safe = builtins.replaceStrings [ "/" ":" "@" " " "!" ] [ "-" "-" "-" "-" "-" ];
  # What is not downloadable (a repo's tree, made by evalrepro) has a URL that says so.
  urlOf = i: if i.source == "" then "evalrepro:not-downloadable:${i.kind}:${i.name}" else i.source;

  debFile =
    i:
    fixed {
      name = debName i;
      url = urlOf i;
      inherit (i) digest;
    };
  wheelFile =
    i:
    fixed {
      name = "${safe i.name}-${safe i.version}.whl";
      url = urlOf i;
      inherit (i) digest;
    };
  tarFile =
    prefix: i:
    fixed {
      name = "${prefix}-${safe i.name}${if i.version == "" then "" else "-" + i.version}.tar";
      url = urlOf i;
      inherit (i) digest;
    };

  # Debian's static busybox, as a directory holding `busybox` (busybox picks its applet
  # from argv[0], and Nix passes the builder's base name).
  busyboxOf =
    inputs:
    let
      i = builtins.head (builtins.filter (i: i.kind == "tool" && i.name == "busybox") inputs);
    in
    fixed {
      name = "evalrepro-busybox";
      url = urlOf i;
      inherit (i) digest;
      recursive = true;
    };

  # The packages a Python needs to run layers.py (tarfile with lzma, zipfile, hashlib, venv)
  # and the wheels `python3 -m venv` installs: unpacked from the base's own .debs.
  toolPackages = "libc6|zlib1g|liblzma5|libbz2-1\\.0|libexpat1|libffi8|libssl3|libmpdec3|libuuid1|libzstd1|libsqlite3-0|libpython3\\.[0-9]+-(minimal|stdlib)|python3\\.[0-9]+-minimal|python3-(pip|setuptools|wheel)-whl";
  pythonVersion =
    debs:
    let
      found = builtins.filter (v: v != null) (
        map (i: builtins.match "python(3\\.[0-9]+)-minimal" i.name) debs
      );
    in
    if found == [ ] then throw "evalrepro: the base has no python3.X-minimal" else builtins.head (builtins.head found);

  toolsOf =
    base:
    let
      debs = ofKind "deb" base.inputs;
      busybox = busyboxOf base.inputs;
      wanted = builtins.filter (i: builtins.match toolPackages i.name != null) debs;
    in
    {
      python = pythonVersion debs;
      root = derivation {
        name = "evalrepro-python-root";
        inherit system;
        builder = "${busybox}/busybox";
        debs = map debFile wanted;
        args = [
          "sh"
          "-euc"
          ''
            bb=${busybox}/busybox
            $bb mkdir "$out"
            for deb in $debs; do $bb dpkg-deb -x "$deb" "$out"; done
          ''
        ];
      };
    };

  # One layer tar: `layers.py KIND` with the spec as JSON ($specPath), output $out.
  layerTar =
    tools: kind: name: spec:
    let
      root = tools.root;
      libs = "${root}/lib/x86_64-linux-gnu:${root}/usr/lib/x86_64-linux-gnu";
    in
    derivation {
      inherit name system;
      builder = "${root}/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
      args = [
        "--library-path"
        libs
        "${root}/usr/bin/python${tools.python}"
        "-I"
        "-S"
        "-B"
        ./layers.py
        kind
      ];
      spec = builtins.toJSON spec;
      passAsFile = [ "spec" ];
    };

  short = key: builtins.substring 7 24 key;

  imagesFromRecords =
    records:
    let
      byKey = builtins.listToAttrs (
        map (r: {
          name = r.key;
          value = r;
        }) records
      );
      parentOf =
        r:
        if r.parent_key == null then
          null
        else if byKey ? ${r.parent_key} then
          byKey.${r.parent_key}
        else
          throw "evalrepro: layer ${r.key} names a parent ${r.parent_key} that is not among the records";
      chainOf = r: (if r.parent_key == null then [ ] else chainOf (parentOf r)) ++ [ r ];
      baseOf = r: builtins.head (chainOf r);
      tools = builtins.mapAttrs (_: r: if r.layer == "base" then toolsOf r else null) byKey;
      toolsFor = r: tools.${(baseOf r).key};
      epochOf = r: builtins.fromJSON (setting "source_date_epoch" (baseOf r).inputs);

      tarOf =
        r:
        let
          name = "evalrepro-${r.layer}-${short r.key}.tar";
          epoch = epochOf r;
          history = ofKind "history" r.inputs;
          tree = ofKind "tree" r.inputs;
        in
        if r.layer == "base" then
          layerTar (toolsFor r) "base" name {
            debs = map debFile (ofKind "deb" r.inputs);
            suite = setting "suite" r.inputs;
            mirror = setting "mirror" r.inputs;
            inherit epoch;
          }
        else if r.layer == "env" then
          layerTar (toolsFor r) "env" name {
            wheels = map wheelFile (ofKind "wheel" r.inputs);
            python = setting "python" r.inputs;
            ensurepip = true;
            inherit epoch;
          }
        else if r.layer == "history" then
          layerTar (toolsFor r) "history" name {
            tar = tarFile "history" (builtins.head history);
            inherit epoch;
          }
        else if r.layer == "instance" then
          let
            install = setting "install" r.inputs;
            below = builtins.filter (each: each.key != r.key) (chainOf r);
          in
          layerTar (toolsFor r) "instance" name (
            {
              tar = tarFile "tree" (builtins.head tree);
              commit = (builtins.head tree).version;
              inherit epoch install;
            }
            # The install command runs in a chroot of the layers below (with busybox's
            # unshare and chroot); without one, the layer needs neither.
            // (
              if install == "" then
                { }
              else
                {
                  lower = map (each: tars.${each.key}) below;
                  busybox = "${busyboxOf (baseOf r).inputs}/busybox";
                }
            )
          )
        else
          throw "evalrepro: unknown layer ${r.layer}";
      tars = builtins.mapAttrs (_: tarOf) byKey;

      imageOf =
        r:
        layerTar (toolsFor r) "image" "evalrepro-image-${short r.key}.tar" {
          layers = map (each: {
            name = each.layer;
            path = tars.${each.key};
          }) (chainOf r);
          inherit (r) tag;
          epoch = epochOf r;
        };
    in
    {
      layers = tars;
      images = builtins.mapAttrs (_: imageOf) byKey;
    };

  # A lockfile's instance images, by instance id: what the flake's packages are.
  imagesFromLockfile =
    lock:
    let
      built = imagesFromRecords lock.environment.images;
    in
    builtins.listToAttrs (
      map (trial: {
        name = trial.key.instance_id;
        value = built.images.${trial.image_key};
      }) (builtins.filter (trial: trial.image_key != "") lock.trials)
    );
in
{
  inherit imagesFromRecords imagesFromLockfile fixed;
}
