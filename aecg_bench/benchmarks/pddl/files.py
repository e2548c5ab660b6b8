"""The pinned AgentBoard PDDL files: 4 domains, 60 problems and the annotation file.

Layout inside the benchmark's data directory (`<data_root>/pddl/`):
`domains/<domain>.pddl`, `problems/<domain>/<file>.pddl`, `test.jsonl`.
Domain and problem files download from the AgentBoard repository at a fixed
commit (`agentboard/environment/pddl_env/pddlgym/pddl/`); `test.jsonl` is
extracted from AgentBoard's Hugging Face data archive (`data.tar.gz`).
The same bytes are in the G-Memory repository (commit 7b581c51).
"""

from __future__ import annotations

from aecg_bench.benchmarks.data import DataFile

AGENTBOARD_COMMIT = "2429689d1f94f625e3989900a6dfd48266c57bcf"
_RAW = f"https://raw.githubusercontent.com/hkust-nlp/AgentBoard/{AGENTBOARD_COMMIT}/agentboard/environment/pddl_env/pddlgym/pddl"
ANNOTATIONS = "test.jsonl"
AGENTBOARD_ARCHIVE = "https://huggingface.co/datasets/hkust-nlp/agentboard/resolve/main/data.tar.gz"
ANNOTATIONS_SOURCE = (
    "the Hugging Face dataset hkust-nlp/agentboard (data.tar.gz, file data/pddl/test.jsonl); "
    "the G-Memory repository ships the same file"
)

PINS: dict[str, str] = {
    "domains/barman.pddl": "a525573b1229c1913efb8cb8e2fe5ca634fafd2c32b0be053aea38996a56798d",
    "domains/blockworld.pddl": "542cc4051f965a054a0563d3b4482c1bc3fb2b87d78fe012d1cfe0eaea08a6a8",
    "domains/gripper.pddl": "7c791d3e9db3e8ef6fe7fb3dbf670c23997e8aab7c5bcc1c2c97014d2e349034",
    "domains/tyreworld.pddl": "f83a60b37fc27aa9abfa15f619983d68730d6e68e2b85e7f281d98e131a366e1",
    "problems/barman/p01.pddl": "0e48b310b50b75d53f5c347d6f9d82f1734bcf992fa1674692d450d31cc080de",
    "problems/barman/p02.pddl": "4a2062baf57ce17ce08bf0e0cd48eda4b41495f77397ac8934b46200766ffdaa",
    "problems/barman/p03.pddl": "82af3f36c400209746ff8a7d78a078bb1af8111225c2f7d64589931a48e89132",
    "problems/barman/p04.pddl": "f8bce10cf7ab7dc83e4e77701a09537c3f2b47dfbd401d75fbd31e72204f1057",
    "problems/barman/p05.pddl": "d950fbda890b2bcc8543dc2399f537cec5487895d4950be8d2dfacaa05983bfa",
    "problems/barman/p06.pddl": "0a8ecf67c09e243fa0fc5269764bfb449e2e40d3348746f2d4717496468b35e4",
    "problems/barman/p07.pddl": "c3727c31caa4d273fcbc3333e01a33c13d39a3ff80922f45a14009d5bb274de9",
    "problems/barman/p08.pddl": "852e8d69a3762ac38a0b031c9e92fa4d02fc44f694e47ffb09077788bfc58ebf",
    "problems/barman/p09.pddl": "e2058aab7131f65528e49b81915020380d05be407c5496e89b706f38dc649e22",
    "problems/barman/p10.pddl": "d058c31ce5c8a27c85536311ff98f149bbec8f1663fbebfb57a5d20bd2edfaa1",
    "problems/barman/p11.pddl": "7efba30b1226a8cad4ba82ebe748a1046b3b0cf0280d3919be5b53a9724929b0",
    "problems/barman/p12.pddl": "08288599b370f3d349237e5e7bf30c5ff9af8a477d4349f35c69518851c85bea",
    "problems/barman/p13.pddl": "5ae2c0cc821f3195815128096a235278f75e83e3bfdafcb4407c311d23b0357e",
    "problems/barman/p14.pddl": "dcca67b67c42641ac2e80666f31ee532bd08752f66d0df92991a65c73cb4b028",
    "problems/barman/p15.pddl": "576d5baad2cdeefd6a9f7e8dfee82f7fce6c57976ee68c76cce7f45117cafcea",
    "problems/barman/p16.pddl": "4d30dbfdb9be3c58524b2dee43c68a3daafabc979d1705e5d0bc2e460e13b104",
    "problems/barman/p17.pddl": "376f8c8ed47be6f0d73f7b60ec183ca04e12b79ab94eed2413513c19c2db896c",
    "problems/barman/p18.pddl": "efdef0ac44d2d6c529a14e311f8c3e530ef3f935a4302d0110707f20eb2b6db3",
    "problems/barman/p19.pddl": "0c94a0fc87db2856b2c97dad2aa78a8be83e7e37461a6f816b4200c14ee2b57a",
    "problems/barman/p20.pddl": "a6e5dc9b5963c02ee99a0a369f71fb5d50c1206880775674cdda4c3e18ceb855",
    "problems/blockworld/problem1.pddl": "4568e078b8fd1a9f3303de3785c6a24ce5de12a8644f7061b03f6def4a80c07e",
    "problems/blockworld/problem10.pddl": "fac86e3c7cfec658d0c144f2b8f14d5a29f8d8d7332706fc3ff3c8d84fe4f39f",
    "problems/blockworld/problem2.pddl": "6b7bd21453c84cbe66ce59107c027ef0ddc15473cb1f1a538c3184e5aaa56eb4",
    "problems/blockworld/problem3.pddl": "d86b9836219b6bb290344acac91d5b95efe1758126f150358ff334ad9749d715",
    "problems/blockworld/problem4.pddl": "dc96db073611b6e37ae246bf11573014984fda4ebc449b82abf48f9a1829fb6a",
    "problems/blockworld/problem5.pddl": "65d1f8790c5d6d6ee528c39c7108b8ab8be2111fd950f101aaa688a8be9a7ec9",
    "problems/blockworld/problem6.pddl": "3e911fe5bd6f98c227be2efea84004a504d8d36f09485c0fd259fd74c4028fd7",
    "problems/blockworld/problem7.pddl": "5ed87381dc49e44cd317f8f4d868dbc59a9411f9263018a9ab034f2581e0037d",
    "problems/blockworld/problem8.pddl": "9bf3b029ee55c9ad78719b1ddd3977e4e158cc2fab2f820bb1248585e42ff787",
    "problems/blockworld/problem9.pddl": "4a5752b138157493b5ca615a666c6ec1f59ffa0466d5f766104c583259837ca3",
    "problems/gripper/prob01.pddl": "968130f7f9f914a4e12c81d31af6de8d223881b5d219a672ac2c28a942256d14",
    "problems/gripper/prob02.pddl": "434736130b325b24b189ac103391bc16d0c16fc65ce0fac57046c9f8917c4ef0",
    "problems/gripper/prob03.pddl": "8b2c4e1f36a0e61e215b9c83d6ca62ef9208339c79654e11337431e6e5bcafc3",
    "problems/gripper/prob04.pddl": "0b65100072f50403c56c60a2693a85b7a069d021595aa68c0621cef9dd4f4dba",
    "problems/gripper/prob05.pddl": "82bc711ead36c2f826e098b808161401a04ea105cd1e2c3484ac668584994822",
    "problems/gripper/prob06.pddl": "3841b67c135d52dfb6a9065a97c57d390d8789c6fc1819908f9d8c73fd374485",
    "problems/gripper/prob07.pddl": "1762cb13a03375fb0a0ab61bee3fdf798f9c99a65a803bf0334e79ae66be54b1",
    "problems/gripper/prob08.pddl": "273b978ce8259028c871a532f71f2eab9d73d4f2f5aa16bdec843ab6802fbb0c",
    "problems/gripper/prob09.pddl": "ca573ba1fac559c933a7a343fa152b51d65189c98107561e3c37d2fedca93d4d",
    "problems/gripper/prob10.pddl": "f30d5735e77d7f046a5436224e5e3c5ff248c9bf2c0e9f95f74ca64c9a9e2d28",
    "problems/gripper/prob11.pddl": "fcb09d87de69188441bc669551c1ca2028d5800ac05ef49ad671b1f360f76548",
    "problems/gripper/prob12.pddl": "39473160ab98e7555541f1a8589be1f600ee50bc99741885bf594f2a7c69b460",
    "problems/gripper/prob13.pddl": "cbff246470bb3d719ae46133413aaaed7a1e2879968448bf4c4d86d778cb58d8",
    "problems/gripper/prob14.pddl": "8715f3f8dc4adb0a6fd4936a260e06071d652fe7213d8483f127b58d414a4275",
    "problems/gripper/prob15.pddl": "7d3284e44ace3759fe414d135dbc33d50afbad1633e70108391e3114ff80deb0",
    "problems/gripper/prob16.pddl": "21590b2215cc696950a5365cd731eb20214c26bd1810c6307dd7a67e660948bd",
    "problems/gripper/prob17.pddl": "9445f4d20cfc913113269514af257cec72e515c5fc7194297c30b80a1d9194dd",
    "problems/gripper/prob18.pddl": "a61ebf95c0faf38c0c4f45ae0330a4c8352e0bb85c94f82622561e81e3b8f097",
    "problems/gripper/prob19.pddl": "06ef84c87bd8a0d97a807450bee8c6e8a86103bc72970f2c4d92d9c47bfc947c",
    "problems/gripper/prob20.pddl": "6ffd2ac87f75431f2330c152104d8dce584e3a53d7e01cb2d92ba651a8009698",
    "problems/tyreworld/p01.pddl": "c4567ab50deeac38ac1bf11e9ebda2e23d3a0e78087e4f92ab2c2165b62cf674",
    "problems/tyreworld/p02.pddl": "e9397bf5c83dd2dfdcb5e2796dcba604c56ad16033745ad42f9e9bee083cffac",
    "problems/tyreworld/p03.pddl": "99ea6a748dedf941dfa72de2277621e54d87f46afb19e0e84f1625187d371505",
    "problems/tyreworld/p04.pddl": "28fb330d691e0616719c9f10d9fe0104bfb4e893caa3d06e2a5867220ab068f5",
    "problems/tyreworld/p05.pddl": "ee19a62c321823f7ffe219d7cebb618515cbb72d3a70634dc59c62c35478a8b1",
    "problems/tyreworld/p06.pddl": "1a104d4ff627d91c04fad8bd7ba2113d666c737101c2346cbe50bd4f91399c9f",
    "problems/tyreworld/p07.pddl": "54b6ea8e10b4015ee1e5bf03f66e9bf838d29f529e518a0c8a62b623f6bdceaf",
    "problems/tyreworld/p08.pddl": "9b8488c7c33464d01ac99539dfed7fcc23098551c82b96fabf4f9138a4bc922f",
    "problems/tyreworld/p09.pddl": "a960940c30c107557b826269bf7a6e85f7ecd704cb6165f64da1074dcd128783",
    "problems/tyreworld/p10.pddl": "68630c95c47f0584793b59acdeb15f2e66917b9fc6d6fa56c6528e9a2a7874e0",
    "test.jsonl": "555295d7e207b89ffad10f9c7340337a6a208c5cbd34e6d0707e719f3d0bc23e",
}


def data_file(relpath: str) -> DataFile:
    """The DataFile for one pinned path, with its AgentBoard download URL where there is one."""
    if relpath == ANNOTATIONS:
        return DataFile(
            relpath, PINS[relpath], AGENTBOARD_ARCHIVE, ANNOTATIONS_SOURCE, "tar.gz", "data/pddl/test.jsonl"
        )
    if relpath.startswith("domains/"):
        url = f"{_RAW}/{relpath.removeprefix('domains/')}"
    else:
        url = f"{_RAW}/{relpath.removeprefix('problems/')}"
    return DataFile(relpath, PINS[relpath], url, f"AgentBoard @ {AGENTBOARD_COMMIT[:8]}")


def problem_files(domain: str) -> list[str]:
    """A domain's problem files in lexicographic order (pddlgym's `sorted(glob(...))`, AgentBoard's index)."""
    return sorted(p for p in PINS if p.startswith(f"problems/{domain}/"))
