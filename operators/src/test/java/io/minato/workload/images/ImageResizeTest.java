package io.minato.workload.images;

import static org.assertj.core.api.Assertions.assertThat;

import io.minato.spi.Patch;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

/**
 * The resize against PIL's own (Pillow 9.4), which torchvision's RandomResizedCrop and Resize call
 * on PIL images: a 37 x 29 image defined by a formula, its references written by {@code
 * src/test/resources/images/pil_resize_references.py}. The resize does PIL's fixed-point
 * arithmetic, so every byte is PIL's.
 */
class ImageResizeTest {
    private static final int W = 37;
    private static final int H = 29;

    /** PIL's crop (5, 3, 30, 23) resized to 8 x 8: a downscale, where PIL antialiases. */
    private static final String DOWN =
            "60358a7462a38aa68da0817db66674cc9e82df7c93c8727c7d3ca591696ea7ad81bd8884d36d7dd2a57d8983"
                    + "8d34797a9e4374b2708fc8b488d98c81ac74754a9b81258885348086be4b6cd27893d7b37f92627a2c7c812b"
                    + "6e8f40878b548078da528cb67f7f56b7792658793583884b727b617b8375578d725a822b877d2abf773f6067"
                    + "558b7a6b7a7b81807695577a20617f348e794abd85605c8876926d8c8175a2877eb65e833d687a51958967a9"
                    + "857d437c939978a98871bf8e86d36580";

    /** The same crop resized to 40 x 40. */
    private static final String UP =
            "4a22564d275d512e6656366f5a3f795f488263538b675e956c699e7076a87483b17992ba7da1c482b0cd86c1"
                    + "d68ad2e08fe5e99388f3970bec9c2055a0350fa54b18a96221ad792bb29234b6ab3ebac547bfe050c3ab5ac8"
                    + "2763cc346cd05276d5717fd99089ddb092e2d19be6a3a5eb26aeef39b7f252be4d235c502864542f6e593778"
                    + "5d408262498c6654966a5fa16f6aaa7377b57784bf7c93c980a2bf85b1a189c2a78dd3b292e6bc9689c69a0c"
                    + "c49f2156a33625a84c2fac6338b07a43b5934db9ac58bdc661c2e16bc6ac76cb2880cf358ad35394d8729edc"
                    + "918de0b173e5d27de9a487ee2791f23a9bf553a25424695729715b307d603889644194694aa06d55ab7160b8"
                    + "766bc37a78cf7e85da8394e687a3b68cb24a90c34994d45599e7619d8a6da10d74a62258aa3750af4d5cb364"
                    + "67b77b73bc947ec0ad8bc4c796c9e2a2cdadadd229b9d636c5da54d1df73dce39294e7b234ecd340f0a54bf5"
                    + "2857f93b62fc546b5a26755d2b7f61328c663a996a43a66f4cb47357c17762c37c6da7807aa98487b68996c4"
                    + "8da59592b42a96c52b9ad6399fe946a38c53a70f60ac246eb0397bb54f88b96695bd7da3c296b0c6afa2cac9"
                    + "8bcfe498d3afa5d82bb3dc38c0e056cde575dae99494edb435f2d542e2a74fbf2a5dbf3d6ac2567361278264"
                    + "2c8c68339b6d3baa7144b9764dc77a58d67e63c2836e58877b438b885290976194a65c99b5429dc64da1d75c"
                    + "a6ea6baa8d7aae1089b32597b73aa6bc50b5c067c4c47ed3c997e1cdb09dd1ca40d6e54edab05ddf2c6ce339"
                    + "7be7578aec7698f0958bf4b576f9d685c1a8944e2ba2463eb14957bc67298e6a2e9a6e35ab733dbb7746cb7c"
                    + "4fdb805ac88465998970308d7d1d918a2e96993e9aa84e9fb75ea3c86fa7d980acec90b08fa0b412adb92795"
                    + "bd3c92c252a2c669b2ca80c3cf99d3d3b290d7cc34dce744e0b255e52e65e93b76ed5986f27896da978bbab7"
                    + "78bfd88887aa98142da80c40b90f59c46e2a9b712fa77536ba7a3ecc7e47dd8350ef875b958b664890713194"
                    + "7e37988b499d9a5ba1a96da6b87faac991aedaa3b3edb5b790c7bb13cdc02867c43d3dc9534fcd6a61d18173"
                    + "d69a84dab37bdecd69e3e87be7b38cec2f9ef03cb1f45ac3f979d4a9989241b83946d94b36ab5c132e6e1341"
                    + "80165a8d742ca77731b57b38c58040b08449af8952c38d5d6b91682b96733d9a80519e8d65a39c79a7ab8cac"
                    + "ba9fb0cbb3b4dcbbb9efa6bd92adc115b5c62a51ca3f28cf553cd36c4fd78363dc9c76e0b58ae4cf99e9ea85"
                    + "edb584f23198d23eacba5cbfbf7bd26f9a9207ba3a0cdb4d10ad601530741943641c5c557b2db47e32c28239"
                    + "cc8741698b4a42905357945e489869429d7456a1816ba58e80aa9d96aeacabb3bbc0b7ccd5bbddc6c0f063c4"
                    + "9354c81665cd2b52d14053d65669da6d7ede8493e39da7e7b6bdebd0c6f0eb63f4b63cf93251913f67415d7c"
                    + "467c902e9b890ebb7b13dc9017aea51c31ba204463235d1e812fc08434d0883bd78d434e914c1496552b9a60"
                    + "429e6b59a3766fa78385ab909cb09fb3b4aeb6b9bda4bdceb7c1dfaac6f248ca953bce1851d32d68d7427fdc"
                    + "5896e06f88e48683e99f99edb8b0edd2bbcaed59bab834bf344b574162075f780c7e8e109d8914bd7c19de93"
                    + "1db0a92233c026466b295f268830cd8b35de8f3ce694445f984d279d563fa16157a56c70aa7788ae84a0b291"
                    + "b8b7a0d0bbafadc0be4dc4cf59c8e065cdf355d19662d5197ada2e92de43aae359c3e7706feb8733f0a04bf4"
                    + "b963ecd37879ee6841b96c46358426429d0e60b5137fcd179e911bbe3d20df5624b16e2934862d477a30606f"
                    + "8e32d99137d0953eba9a465b9e4f39a35853a7636dab6e86b079a0b486bab893d0bda2c2c1b18bc6c02dcad1"
                    + "3bcee255d3f56fd79888db1b9ee03090e44596e95bafed725de58923c2a23dbabb57b2d5703ff08a07bb900c"
                    + "37821044971462b11981cb1da09121c03f26e1582ab3722f368c3349823662779533e69838a59c3f51a14744"
                    + "a5504baa5966ae6482b26f9db77ab9bb87d4bf94e3c4a387c8b252cdc145d1d25cd5e378daf694de99afe21c"
                    + "bee73161eb4641f05c5cf47353d48a5261a36e41bc8a41d6a51ef1c00ebc9f1338431745521b636d20828924"
                    + "a18828c1802de29b31b4b63637d13a4a813d63409b35b29e3a73a24124a74940ab525db05b7ab46697b871b4"
                    + "bd7cd1c189d2c596bfcaa564ceb445d3c361d7d47edbe59be0f8b9e49bb9e81ea6ed334bdd482cba5e49ba75"
                    + "659a8c8227a5a007bea10bd49910c7b614929719363c1d474d2165692684872aa3882ec38133e49d37b6ba3c"
                    + "39d7404c88436548a2363fa53b38a94233ae4a51b25370b75c8ebb67acbf72cbc47deac88ab4cc9762d1a659"
                    + "d5b564dac482ded5a0e2e6bee7f9deeb9ca8ef1f56f4344cbc4957495f76417694398db216a6d10ebf9c12cd"
                    + "4e17706c1b3b77202f6d2448882866a62d85c531a48f35c4423ae5603eb77f433a9d474d974a6691a8380bab"
                    + "3d22af4442b44c62b85582bd5ea2c169c2c574d6ca7fcece8c8ed29942d7a862dbb782e0c6a2e4d79ee8dca2"
                    + "edc7c3f17a8ef12142ce3662824b830f61a307789e0b8fa210a8c314c18f18cb421d4662211183262da32a4a"
                    + "9f2e68a23387c337a68f3bc64340e76344b96f493c674d4f83506899af3918b23e2fb64551bb4d73bf5694c4"
                    + "5fb6c86ad7cc75d5d1807fd58d60d99a5ddea97fe2b8a1e7c7c3ebd878efc545f46068f8336df0226a7d378c"
                    + "314cae0e62d00e798512905217a9741bc27a1fcc772447992812ba2d2edc314b9235695f3a88813ea78642c7"
                    + "8447e8a64bba8b503d3554504a576962b53b24b8403dbc4760c14f83c558a6ca61cace6cc9d277acd78257db"
                    + "8f56df9c79e4ab9de8baacedc9a7f1da5ae9bb29c62e4dbe116fb6248e43398a0b4e991064bc147b73189242"
                    + "1dab6621c48925cea82a49a32e14b23330d6374d8d3b6b5b408a7f44a98648c9854deaa851bc8f563f3b5a52"
                    + "525d6b6abc3c31bf414ac3486fc85094cc59b9d162ddd56d96d9785bde8358e29070e69d95ebacbaefbba3f4"
                    + "ca4ff8db44d8bc4c652f724512964525af223a5b124f441765691b7c6a1f937224ac9728c5bc2ccfd5314a81"
                    + "35156a3a318f3e4e90426c98478bbd4baa8d4fca4654eb6b58bd7c5d4078615399646cb3c23e3dc54358c94a"
                    + "7fce52a5d25bb7d764b5db6f6cdf7a3ee48564e8928aec9fadf1aeabe1bd81becc2fbedd4a9ebe702b31970b"
                    + "14a00f2797143c451851301d6756217e7c2595962aae952ec7af32d1c9374c773b176240338844508b486e94"
                    + "4d8dbb51ac8d55c8485ac16e5e9380633e7e6755a16a6ebbc93f4acc4465d04b8ed553b6d95ca1de6551e270"
                    + "49e67b55eb867def93a4f3a0c0f8af70c0be484dcd4845de6c3dbf931a32bc12158f1628471b3d471f525b24"
                    + "6883287fab2c96ae31af5e35c86239d2863e4d864218994734c14b517e4f6f51548e7958ad845cc189616ab1"
                    + "653c9c6a374c6e5668716f84cf4156d24673d64d9ddb55c6df5e9fe46729e87243ec7d6cf18895d995a2b9a2"
                    + "9cbeb14e86c03b13cf640be08e0fc1ab1434ad1817761c2a33213f5d2554862a6ab02e81b532989e37b1503b"
                    + "ca553fd47a444f7c481a914d36bb51537855714d5a90775eaf8462bf8a6740b36b12a070355274587077718c"
                    + "d64263d94781dd4eace256d7e65fb2eb683def7358f37e83f889aea8968540a33f45b24335c15a12d08512e1"
                    + "af16c2b61b356a1f1855232b5b2840862c55b1316bdd35829b3999663eb26942cb8846d5a74b505a4f1b4954"
                    + "377458547b5c728a6191b565b08c69c04b6e417672138d7736907b59b77e72d5dc446fdf498fe350b7e858bc"
                    + "ec6198f16a4dd1756db9809abe8bc66e988306a51f0bb44c0fc37814d2a518e3ad1cc49a21374f251a57292d"
                    + "7f2e428432579d376dc93b84893f9b6244b48f48cda04cd79c515250551d415a396e5e56766274866793b36b"
                    + "b28c6fc24c7443797815917d3896815bbe8474dde3457ce64a9cea51beef5975f36252f86b589076824081b1"
                    + "458cdf2d999d0da63b12b56916c4971bd3c51fe48723c55528385c2c1b7e302ea03543563958483e6e764285"
                    + "80469c924bb5c04fce9b53d85958535f5c1e78613aa76557696975436e947172b38376c38d7b44bc7f16ad84"
                    + "3963885c858b75a6e94788ec4caaec53cac95b59b96438be6d685678980683bc0b8ec30f9b9313a85718b787"
                    + "1cc6a221d5a925e66929c7452e3a75321d883630883b45403f5a334470634887924c9eb651b7be55d08e59da"
                    + "515e558162209c673ca46b59646f773f74966f78b5837cc58f8146be8518b18a3b698e5e6991776ef04895f3"
                    + "4db7eb54d9785c6a40654b456e7c2579ad0d84bb128f74169c651aa9721fb8a423c79928d6522ce75330c868"
                    + "353b9a391e773d3138424641465b5e4b71904f88c1539fce58b8875cd17960db866556b76921ac6e3d65725a"
                    + "6776787c7b97ad7fb68a83c6508847818c199e913ca7955f68987837b64aa1b94fa9b156ac3e5e6606675d0b"
                    + "70900f7b9f13869218914c1c9e5b20ab8a25ba9529c9782ed83232e95936ca803b3d8b3f205d433324484857"
                    + "4c5d76517381558aaf59a1be5eba7962d36c66dd7a6b58ad6f23a4743f5f785c627c7a788199ab85b88a89c8"
                    + "4d8e4957921b76973ea99b61709e7a3f3d4bae40507e4057431d5f4f0d68701271a4167c6c1a87411f924d23"
                    + "9f7527ac9d2cbb5a30ca3f35d94b39ea7b3dcb8b423e4846213c4a344c4f4980535e795874365c8b5e60a286"
                    + "65bb9269d4676dde2f7259637624847b40907f5d55837b35889a698cb98190c986954a42991c3b9e3f6fa262"
                    + "7fa57b88034dba0652700a59160f614c136a821873b81c7e5e20892425945929a18f2daeb532bd4b36cc313b"
                    + "db673fec9d43cda34840394c233e503670554b7e5960655e7622628d4c66a4766bbd846fd65a73e024785b59"
                    + "7c267c81428a855f50897d318e9c6792bb8196cb879b4c459f1e3fa44175a86487ab7d900a4ec70d537d115a"
                    + "2516625d1a6b941f74cb237f73278a3b2c957230a2a934afd139be683dcd5042dc8746edbf4acec64f415e53"
                    + "24655737915c4c50606138657747698e7b6da58e72be4d76d7457ae1597f5c9083278b88434b8c6053907e6e"
                    + "959da599bc889dcc50a24d60a61f83ab42baaf6586b27e591050d313558b175c351c646d206d922576a32981"
                    + "6d2d8c5232978a36a4a73ab1b13fc07243cf6f48dea74cefbd50d0b655437759268c5d39b5624e4e6663376b"
                    + "79706f908573a77e78c03f7cd95480e389855e9a8929838e454492627196809e9b9faf9fbe88a3ce52a84f62"
                    + "ac2187b144c0b5678eb880611751e01a56991e5d4423657e276e7d2c773f30824a348d693998a33da58a41b2"
                    + "5446c1674ad08e4fdfc853f09657d1715c44846027b3643add694f776d6462727a9d76916b7aa8467fc15883"
                    + "da8787e4b68c5f78902a639546759963ac9d81c3a2a085a6bf80aacf8baf504db3224cb84586bc689dbf81aa"
                    + "1d53ec2058a7245f5329678f2d707b3279173684433a8f803f9abb43a78847b4344cc37050d29855e1ac59ce"
                    + "785d9f61623a9d6629bd6a3cc96f518d73667a787c8e7c935980aa4285c37e89dc9f8de6aa92616e962c5b9b"
                    + "486f9f65a7a383bfa8a283acc180b0d18cb55250b92450be478cc26aa4c583b22454f92759b42b60623068a0"
                    + "34718d397a2b3d8558419097469bd44aa8a24eb54f53c48d57d38f5ce2556087626438846923c26d2aac713d"
                    + "7976528f7a677d7f7d4383945087ab728cc4af90dd9a94e76799627d9d2d6aa24930a66662aa8494afa3a9b3"
                    + "c287b7d255bc536bc02594c548d2c96ba3cc847b2a56c52d5b9e316271366ab03a739f3f7c3f43876e4792a2"
                    + "4c9db850aa9854b76b59c6ab5dd59a62e4396665686a069c6f19b3732c92773f617c5479806968857f2f8996"
                    + "628dad9692c6ad96df8d9ae95c9f6473a32f62a84b2aac685db08690b5a5a7b9c487bdd456c2556dc62798cb"
                    + "4ad8cf6dabd28683315752345c633863803d6bc14174b2467d524a88834e93a1539e6957ab6a5bb88760c7c8"
                    + "64d6b969e5596d668a7107a7761a707a2d717e408283554a876a3b8c805490979194aeae99c7769de078a1ea"
                    + "89a66551aa3042af4c5bb36998b787b5bca67dc0c57ec4d58fc95658cd285dd24b9dd66ebad987cc37591e3a"
                    + "5e4d3e658c436da64776984c7f62508a995495ac59a04d5dad6061ba9f66c9b96ad8ab6fe77573688877098b"
                    + "7c1c55802f738442a68957488d6c3b92827d96999b9ab09e9fc968a3e26ba7ec7dac6747b0324eb54e90b96b"
                    + "afbd89b1c2a87bc6c77ecad791cf585bd32a4dd84d67dc70a6df89d43e5a2b415f5a4566934a6e5f4e775253"
                    + "806e578bae5b96c360a16664ae7a68bbb26dca7e71d97276e88e7a69627e0a46831d6287309a8b43ce905872"
                    + "946d669983aa9d9a82a1b166a6ca81aae366aeed3ab36856b73385bc4fc9c06ca2c48a86c9a9a1cdc885d1d8"
                    + "5ad65976da2b69df4e35e3716de68a9d415b314460614867964d6f3b51782f5681745a8cb95e97ce63a27267"
                    + "af876bbcbc70cb6174da5579e99a7d6a4f810b24861e688a31ad8e44e2935987976e7b9c84c0a09b75a4b24a"
                    + "a9cb8eade463b1ee18b6695dba34a1bf50e6c36d9bc78b70ccaab4d0c989d4d93ed95a83dd2c77e24f1ce672"
                    + "51e98b81";

    /** torchvision's evaluation recipe at size 12: Resize(13) to 16 x 13, CenterCrop(12). */
    private static final String EVAL =
            "301f21403c2a50653361993d71ad4781345091735aa1aa63b15162c29946d2574de17d574a25565a42766a6b"
                    + "937b9f9e8bb39c9b3a79ab7973bbb091cb579fdb9f64e15d74888391672c917749b387727298a66ea8ba7cb8"
                    + "4181c88098d8b77ade5e98b1a67a56648e238a7f8433ae945061a47979b5ad98c5c181d54872db8772b2be7f"
                    + "5b658823ad7f266b77369176a13a76b15779c180acd2b47ae2ba8ec24b76618e7f249888225e8933b4824372"
                    + "88539880bd406ccd5d99dd867fdaba81957d753c41731f94842e74933e588e4fad815f6f796f9e80da477bd7"
                    + "64809a8d8a3fc171227b802c46793c9b8d4c7b7a5c5f7a6d82857d55938da587994e82426b771d947d2ac876"
                    + "3a826d4a4d5e5aa2896a827d7a66708b86799b5a74abac6c1e548c25716d359a8146cb7f567c9066537376a8"
                    + "6a868875966c7fa78c74b76083c7b286325b8842788052a18863be8b734182835a7293af7da38f6bb37388c4"
                    + "9378d46791e380874f62855f7f786fa88880c28c903f79a06172b0b074c07f86d07a95de9a78ce6e667f5d8d"
                    + "6c69937c868e8caf8b9dc986ad4681bd6876cda688da4486cc818283a17d307579206475";

    private static int[] image() {
        int[] rgb = new int[W * H];
        for (int y = 0; y < H; y++) {
            for (int x = 0; x < W; x++) {
                int r = (x * 7 + y * 13) % 256;
                int g = (x * x + 3 * y) % 256;
                int b = (x * y * 5 + 11) % 256;
                rgb[y * W + x] = r << 16 | g << 8 | b;
            }
        }
        return rgb;
    }

    @Test
    void shouldResizeACropAsPilDoesDownAndUp() {
        float[] down = new float[3 * 8 * 8];
        ImagePreparation.resize(image(), W, 3, 5, 20, 25, down, 8, 0, 8);
        assertPils(down, 8, DOWN);

        // In slabs of rows, as the preparation steps run it: the same values.
        float[] up = new float[3 * 40 * 40];
        for (int from = 0; from < 40; from += 7) {
            ImagePreparation.resize(image(), W, 3, 5, 20, 25, up, 40, from, Math.min(40, from + 7));
        }
        assertPils(up, 40, UP);
    }

    @Test
    void shouldResizeAndCropAsTorchvisionsEvaluationRecipe() throws Exception {
        java.awt.image.BufferedImage img =
                new java.awt.image.BufferedImage(W, H, java.awt.image.BufferedImage.TYPE_INT_RGB);
        img.setRGB(0, 0, W, H, image(), 0, W);
        // Mean 0 and std 1: the values are the resized pixels over 255.
        ImageConfig plain = new ImageConfig(12, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1 << 10);
        Patch p =
                ImageTransforms.evaluation(
                        new EncodedImage(
                                new ImageFile("/data/c/x.png", "c/x.png", 0),
                                ImageFolderTest.encode(img, "png")),
                        plain);
        assertPils(p.image(), 12, EVAL);
    }

    /** {@code planes} (3 x s x s, values in [0, 1]) against PIL's RGB bytes, row by row. */
    private static void assertPils(float[] planes, int s, String reference) {
        byte[] pil = HexFormat.of().parseHex(reference);
        assertThat(pil).hasSize(3 * s * s);
        double worst = 0;
        for (int i = 0; i < s * s; i++) {
            for (int c = 0; c < 3; c++) {
                double mine = planes[c * s * s + i] * 255.0;
                worst = Math.max(worst, Math.abs(mine - (pil[3 * i + c] & 0xFF)));
            }
        }
        assertThat(worst)
                .as("largest difference from PIL, in levels of 255")
                .isLessThanOrEqualTo(1.0);
    }
}
